package dev.fencing.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.FencePolicy;
import io.micrometer.core.instrument.Metrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;

class FencedConsumerBuilderTest {
    private static final RecordHandler<String, String> HANDLER = (record, token) -> {};

    private static FencedConsumerBuilder<String, String> builder() {
        return FencedConsumer.builder(new StringDeserializer(), new StringDeserializer());
    }

    @Test
    void refusesAutoCommit() {
        assertThatThrownBy(() -> builder().property(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "true"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("enable.auto.commit=true is refused");
        builder().property(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false); // harmless
    }

    @Test
    void refusesDeserializerClassesInProperties() {
        assertThatThrownBy(() -> builder()
                        .properties(Map.of(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("key.deserializer");
    }

    @Test
    void refusesUnknownAndMalformedFencingSettings() {
        assertThatThrownBy(() -> builder().property("fencing.strikt", true))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unknown setting fencing.strikt");
        assertThatThrownBy(() -> builder().property("fencing.strict", true))
                .as("the alias of fencing.policy that an unreleased version had")
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unknown setting fencing.strict")
                .hasMessageContaining(FencedConsumerConfig.POLICY_CONFIG);
        assertThatThrownBy(() -> builder().property(FencedConsumerConfig.STALE_RECORDS_CONFIG, "ignore"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'ignore' is not one of dead-letter, drop");
        assertThatThrownBy(() -> builder().property(FencedConsumerConfig.POLL_TIMEOUT_MS_CONFIG, "0"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(FencedConsumerConfig.POLL_TIMEOUT_MS_CONFIG + "=0: pollTimeout must be positive");
        assertThatThrownBy(() -> builder().property(FencedConsumerConfig.COMMIT_MAX_RECORDS_CONFIG, -5))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(
                        FencedConsumerConfig.COMMIT_MAX_RECORDS_CONFIG + "=-5: commitMaxRecords must be >= 0");
        assertThatThrownBy(() -> builder().property(FencedConsumerConfig.COMMIT_INTERVAL_MS_CONFIG, -1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(
                        FencedConsumerConfig.COMMIT_INTERVAL_MS_CONFIG + "=-1: commitInterval must be >= 0");
        builder().commitInterval(Duration.ZERO); // commit after every poll
        assertThatThrownBy(() -> builder().deadLetterTopic("has space"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'has space' is not a legal Kafka topic name");
        assertThatThrownBy(() -> builder().closeTimeout(Duration.ofSeconds(-1)))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void passesDeadLetterProducerSettingsButNotSerializers() {
        builder().property(FencedConsumerConfig.DEAD_LETTER_PRODUCER_PREFIX + "compression.type", "lz4");
        assertThatThrownBy(() ->
                        builder().property(FencedConsumerConfig.DEAD_LETTER_PRODUCER_PREFIX + "value.serializer", "x"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("raw bytes");
        assertThatThrownBy(() ->
                        builder().property(FencedConsumerConfig.DEAD_LETTER_PRODUCER_PREFIX + "max.block.ms", 60_000))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("fencing.dead.letter.producer.max.block.ms is refused")
                .hasMessageContaining(FencedConsumerConfig.DEAD_LETTER_TIMEOUT_MS_CONFIG);
        assertThatThrownBy(() ->
                        builder().property(FencedConsumerConfig.DEAD_LETTER_PRODUCER_PREFIX + "transactional.id", "t"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("fencing.dead.letter.producer.transactional.id is refused");
    }

    @Test
    void refusesDeadLetterProducerSettingsThatCouldLoseADeadLetter() {
        builder().property(FencedConsumerConfig.DEAD_LETTER_PRODUCER_PREFIX + "acks", "all");
        builder().property(FencedConsumerConfig.DEAD_LETTER_PRODUCER_PREFIX + "acks", "-1");
        builder().property(FencedConsumerConfig.DEAD_LETTER_PRODUCER_PREFIX + "enable.idempotence", true);
        assertThatThrownBy(() -> builder().property(FencedConsumerConfig.DEAD_LETTER_PRODUCER_PREFIX + "acks", "0"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("fencing.dead.letter.producer.acks=0 is refused");
        assertThatThrownBy(() -> builder().property(FencedConsumerConfig.DEAD_LETTER_PRODUCER_PREFIX + "acks", 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("fencing.dead.letter.producer.acks=1 is refused");
        assertThatThrownBy(() -> builder()
                        .property(FencedConsumerConfig.DEAD_LETTER_PRODUCER_PREFIX + "enable.idempotence", "false"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("fencing.dead.letter.producer.enable.idempotence=false is refused");
    }

    @Test
    void registersNoMetersInTheGlobalRegistryWhenNoRegistryIsGiven() {
        SimpleMeterRegistry global = new SimpleMeterRegistry();
        Metrics.addRegistry(global);
        try {
            FencedConsumer<String, String> consumer = builder()
                    .properties(Map.of(
                            ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:1",
                            ConsumerConfig.GROUP_ID_CONFIG, "g"))
                    .topics("t")
                    .handler(HANDLER)
                    .heapOnlyWatermarksLostOnRestart()
                    .build();
            consumer.close();
            assertThat(global.getMeters()).isEmpty();

            SimpleMeterRegistry given = new SimpleMeterRegistry();
            builder()
                    .properties(Map.of(
                            ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:1",
                            ConsumerConfig.GROUP_ID_CONFIG, "g"))
                    .topics("t")
                    .handler(HANDLER)
                    .heapOnlyWatermarksLostOnRestart()
                    .meterRegistry(given)
                    .build()
                    .close();
            assertThat(given.find("fencing.kafka.watermarks.held").gauge()).isNotNull();
            assertThat(global.getMeters()).isEmpty();
        } finally {
            Metrics.removeRegistry(global);
        }
    }

    @Test
    void requiresBootstrapServersGroupTopicsAndHandler() {
        assertThatThrownBy(() -> builder().topics("t").handler(HANDLER).build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("bootstrap.servers is required");
        assertThatThrownBy(() -> builder()
                        .property(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:1")
                        .topics("t")
                        .handler(HANDLER)
                        .build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("group.id is required");
        assertThatThrownBy(() -> builder().property(ConsumerConfig.GROUP_ID_CONFIG, " "))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> builder()
                        .property(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:1")
                        .property(ConsumerConfig.GROUP_ID_CONFIG, "g")
                        .handler(HANDLER)
                        .build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("topic");
        assertThatThrownBy(() -> builder()
                        .property(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:1")
                        .property(ConsumerConfig.GROUP_ID_CONFIG, "g")
                        .topics("t")
                        .build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("handler");
    }

    @Test
    void refusesASecondHandlerAndADeadLetterTopicThatIsSubscribed() {
        assertThatThrownBy(() -> builder().handler(HANDLER).handler(HANDLER))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("already set");
        assertThatThrownBy(() -> builder()
                        .property(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:1")
                        .property(ConsumerConfig.GROUP_ID_CONFIG, "g")
                        .topics("t", "t.refused")
                        .deadLetterTopic("t.refused")
                        .handler(HANDLER)
                        .build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("also subscribed");
        assertThatThrownBy(() -> builder()
                        .property(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:1")
                        .property(ConsumerConfig.GROUP_ID_CONFIG, "g")
                        .topics("orders", "orders" + FencedConsumerConfig.DEAD_LETTER_SUFFIX)
                        .handler(HANDLER)
                        .build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("orders" + FencedConsumerConfig.DEAD_LETTER_SUFFIX)
                .hasMessageContaining("also subscribed");
    }

    @Test
    void buildsAndClosesWithoutEverConnecting() {
        FencedConsumer<String, String> consumer = builder()
                .properties(Map.of(
                        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:1",
                        ConsumerConfig.GROUP_ID_CONFIG, "g",
                        FencedConsumerConfig.POLICY_CONFIG, "strict",
                        FencedConsumerConfig.STALE_RECORDS_CONFIG, "drop"))
                .topics("t")
                .handler(HANDLER)
                .heapOnlyWatermarksLostOnRestart()
                .build();
        assertThat(consumer.heldWatermarks()).isZero();
        assertThat(consumer.assignment()).isEmpty();
        consumer.close();
        long again = System.nanoTime();
        consumer.close();
        assertThat(Duration.ofNanos(System.nanoTime() - again))
                .as("a second close of a consumer that never ran, with the default close timeout of 30 s")
                .isLessThan(Duration.ofSeconds(10));
        assertThatThrownBy(consumer::run)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("CLOSED");
    }

    @Test
    void refusesToBuildWithoutAStoreAndNamesBothWaysOut() {
        assertThatThrownBy(() -> builder()
                        .property(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:1")
                        .property(ConsumerConfig.GROUP_ID_CONFIG, "g")
                        .topics("t")
                        .handler(HANDLER)
                        .build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("a watermark store is required")
                .hasMessageContaining("PostgresWatermarkStore")
                .hasMessageContaining("heapOnlyWatermarksLostOnRestart()");
        assertThatThrownBy(
                        () -> builder().heapOnlyWatermarksLostOnRestart().watermarkStore(new InMemoryWatermarkStore()))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("choose one");
    }

    @Test
    void refusesReadUncommittedAndAcceptsReadCommitted() {
        assertThatThrownBy(() -> builder().property(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_uncommitted"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("isolation.level=read_uncommitted is refused")
                .hasMessageContaining("aborted producer transactions");
        builder().property(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "READ_COMMITTED");
    }

    @Test
    void boundsTheDeadLetterWritesOfAUnit() {
        builder().property(FencedConsumerConfig.DEAD_LETTER_TIMEOUT_MS_CONFIG, "500");
        assertThatThrownBy(() -> builder().property(FencedConsumerConfig.DEAD_LETTER_TIMEOUT_MS_CONFIG, "0"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("deadLetterTimeout must be positive");
    }

    @Test
    void takesTheFencePolicyFromFencingPolicy() {
        builder().property(FencedConsumerConfig.POLICY_CONFIG, "STRICT");
        builder().property(FencedConsumerConfig.POLICY_CONFIG, FencePolicy.MONOTONIC);
        assertThatThrownBy(() -> builder().property(FencedConsumerConfig.POLICY_CONFIG, "strictest"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("fencing.policy must be strict or monotonic, got 'strictest'");
    }
}
