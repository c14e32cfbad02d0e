package dev.fencing.testsupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.junit.jupiter.api.Test;

class ServerSourceTest {

    @Test
    void anExternalServerWinsOverEveryMode() {
        Map<String, String> env =
                Map.of("FENCING_ZOOKEEPER_CONNECT", "zk1:2181", ServerSource.MODE_ENV, "testcontainers");
        assertThat(ServerSource.choose(env, "FENCING_ZOOKEEPER_CONNECT")).isEqualTo(ServerSource.EXTERNAL);
    }

    @Test
    void embeddedIsTheDefaultAndContainersAreChosenByMode() {
        assertThat(ServerSource.choose(Map.of(), "FENCING_ZOOKEEPER_CONNECT")).isEqualTo(ServerSource.EMBEDDED);
        assertThat(ServerSource.choose(Map.of("FENCING_ZOOKEEPER_CONNECT", "  "), "FENCING_ZOOKEEPER_CONNECT"))
                .isEqualTo(ServerSource.EMBEDDED);
        assertThat(ServerSource.choose(Map.of(ServerSource.MODE_ENV, "TestContainers"), "X"))
                .isEqualTo(ServerSource.TESTCONTAINERS);
    }

    @Test
    void anUnknownModeIsRefusedNamingTheValue() {
        assertThatThrownBy(() -> ServerSource.choose(Map.of(ServerSource.MODE_ENV, "docker"), "X"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'docker'")
                .hasMessageContaining(ServerSource.MODE_ENV);
    }
}
