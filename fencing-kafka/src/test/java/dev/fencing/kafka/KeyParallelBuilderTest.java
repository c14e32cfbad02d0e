package dev.fencing.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.Test;

/** The key-parallel settings: bad values fail at once naming them, and combinations that cannot hold are refused. */
class KeyParallelBuilderTest {

    private static FencedConsumerBuilder<String, String> builder() {
        return FencedConsumer.builder(new StringDeserializer(), new StringDeserializer())
                .properties(Map.of(
                        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9092", ConsumerConfig.GROUP_ID_CONFIG, "g"))
                .topics("t");
    }

    @Test
    void refusesAConcurrencyOrInFlightLimitOutOfRangeNamingTheValue() {
        assertThatThrownBy(() -> builder().maxConcurrency(0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("maxConcurrency must be from 1 to 4096, got 0");
        assertThatThrownBy(() -> builder().maxConcurrency(5000))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("got 5000");
        assertThatThrownBy(() -> builder().property(FencedConsumerConfig.MAX_CONCURRENCY_CONFIG, "many"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("fencing.max.concurrency must be a whole number, got 'many'");
        assertThatThrownBy(() -> builder().property(FencedConsumerConfig.MAX_CONCURRENCY_CONFIG, "-3"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("fencing.max.concurrency=-3: maxConcurrency must be from 1 to 4096, got -3");
        assertThatThrownBy(() -> builder().maxInFlightPerPartition(0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("maxInFlightPerPartition must be from 1 to 1000000, got 0");
    }

    @Test
    void refusesATransactionalHandlerOnAStoreThatCannotCommitEachRecordWithItsKey() {
        assertThatThrownBy(() -> builder()
                        .maxConcurrency(8)
                        .transactionalHandler(new InMemoryWatermarkStore(), (tx, record, token) -> {})
                        .build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("needs PostgresWatermarkStore")
                .hasMessageContaining("InMemoryWatermarkStore");
        // serial, the same handler and store are fine
        assertThat(builder()
                        .transactionalHandler(new InMemoryWatermarkStore(), (tx, record, token) -> {})
                        .build())
                .isNotNull();
        // and key-parallel with PostgreSQL (nothing connects before run())
        PostgresWatermarkStore postgres = PostgresWatermarkStore.create(Jdbi.create("jdbc:postgresql://localhost/x"));
        assertThat(builder()
                        .maxConcurrency(8)
                        .transactionalHandler(postgres, (handle, record, token) -> {})
                        .build())
                .isNotNull();
    }

    @Test
    void refusesUnitsSpanningPollsInKeyParallelMode() {
        assertThatThrownBy(() -> builder()
                        .maxConcurrency(4)
                        .commitMaxRecords(1000)
                        .heapOnlyWatermarksLostOnRestart()
                        .handler((record, token) -> {})
                        .build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("fencing.commit.max.records=1000 is for the serial consumer");
    }
}
