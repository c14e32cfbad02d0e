package dev.fencing.testsupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.testsupport.spring.FencingTestServers;
import dev.fencing.testsupport.spring.FencingTestServers.Server;
import dev.fencing.testsupport.spring.FencingTestServersContextCustomizerFactory;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Which test classes get servers, and which share a Spring context; without starting any server. */
class FencingTestServersTest {
    private final FencingTestServersContextCustomizerFactory factory = new FencingTestServersContextCustomizerFactory();

    static class Plain {}

    @FencingTestServers
    static class Defaults {}

    @FencingTestServers({Server.POSTGRES, Server.ZOOKEEPER})
    static class SameServersOtherOrder {}

    static class Inherits extends Defaults {}

    @FencingTestServers(Server.KAFKA)
    static class KafkaOnly {}

    @FencingTestServers({})
    static class NoServer {}

    @Test
    void onlyAnnotatedClassesGetServersAndEqualServerSetsShareAContext() {
        assertThat(factory.createContextCustomizer(Plain.class, List.of())).isNull();
        assertThat(factory.createContextCustomizer(Defaults.class, List.of()))
                .isNotNull()
                .isEqualTo(factory.createContextCustomizer(SameServersOtherOrder.class, List.of()))
                .isEqualTo(factory.createContextCustomizer(Inherits.class, List.of()))
                .isNotEqualTo(factory.createContextCustomizer(KafkaOnly.class, List.of()));
    }

    @Test
    void anAnnotationNamingNoServerIsRefusedNamingTheClass() {
        assertThatThrownBy(() -> factory.createContextCustomizer(NoServer.class, List.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(NoServer.class.getName())
                .hasMessageContaining("ZOOKEEPER");
    }
}
