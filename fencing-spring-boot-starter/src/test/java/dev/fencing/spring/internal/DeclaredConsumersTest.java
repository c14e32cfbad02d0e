package dev.fencing.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.spring.FencingProperties;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Which group a declared consumer joins, and which shared settings it gets. */
class DeclaredConsumersTest {
    private static final Map<String, String> SHARED = Map.of("bootstrap.servers", "kafka:9092");

    @Test
    void aConsumersGroupIdIsItsGroup() {
        FencingProperties.Consumer log = consumer();
        log.setGroupId("reservation-log-v2");

        assertThat(DeclaredConsumers.properties("log", log, SHARED))
                .containsEntry("group.id", "reservation-log-v2")
                .containsEntry("bootstrap.servers", "kafka:9092");
    }

    @Test
    void withoutAGroupIdTheConsumersOwnGroupPropertyThenItsNameIsItsGroup() {
        FencingProperties.Consumer log = consumer();
        assertThat(DeclaredConsumers.properties("log", log, SHARED)).containsEntry("group.id", "log");

        log.getProperties().put("group.id", "legacy-log");
        assertThat(DeclaredConsumers.properties("log", log, SHARED)).containsEntry("group.id", "legacy-log");
    }

    @Test
    void aGroupIdAndADifferentGroupPropertyAreRefused() {
        FencingProperties.Consumer log = consumer();
        log.setGroupId("a");
        log.getProperties().put("group.id", "b");

        assertThatThrownBy(() -> DeclaredConsumers.properties("log", log, SHARED))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("group-id 'a' and properties.group.id 'b' disagree");
    }

    @Test
    void aSharedGroupIdIsRefusedNamingTheProperty() {
        FencingProperties.Kafka kafka = new FencingProperties.Kafka();
        kafka.getProperties().put("group.id", "everyone");
        kafka.getConsumers().put("log", consumer());

        assertThatThrownBy(() -> new DeclaredConsumers(kafka, null, () -> null, List.of()))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("fencing.kafka.properties.group.id is set to 'everyone'")
                .hasMessageContaining("fencing.kafka.consumers.<name>.group-id");
    }

    private static FencingProperties.Consumer consumer() {
        FencingProperties.Consumer consumer = new FencingProperties.Consumer();
        consumer.setTopics(List.of("events"));
        consumer.setHandler("plainHandler");
        return consumer;
    }
}
