package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.kafka;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.producer;
import static dev.fencing.kafka.KafkaFixture.sendFenced;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;

/**
 * Defects 2 and 8, and the topics check: the consumer refuses to start from a store that is not
 * authoritative, throws the store's own failure from {@code run()}, and names a missing topic at once.
 */
class StoreAuthorityIT {

    @Test
    void stopsWhenKafkasCommittedOffsetIsAheadOfTheStoreInsteadOfReapplyingRecords() throws Exception {
        // given: two records a member without this store already handled (the group's Kafka offset is 2)
        String topic = newTopic("authority", 1);
        String group = newGroup("authority");
        try (KafkaProducer<String, String> producer = producer()) {
            sendFenced(producer, topic, "sku-1", "first", 3);
            sendFenced(producer, topic, "sku-1", "second", 4);
        }
        KafkaFixture.moveCommittedOffset(group, new TopicPartition(topic, 0), 2);
        List<String> applied = Collections.synchronizedList(new ArrayList<>());

        // when: a member with an empty store joins
        Throwable failure = runToFailure(FencedConsumer.builder(new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .topics(topic)
                .watermarkStore(new InMemoryWatermarkStore())
                .handler((record, token) -> applied.add(record.value())));

        // then: it stops and says why, and applied nothing (seeking to the store's offset would re-apply both)
        assertThat(failure)
                .isInstanceOf(StoreBehindKafkaException.class)
                .hasMessageContaining("Kafka's committed offset 2 is ahead of the watermark store's (none)");
        assertThat(applied).isEmpty();
    }

    @Test
    void runThrowsTheStoresLoadFailureWithItsCauseNotKafkasGenericRebalanceError() throws Exception {
        String topic = newTopic("load-fails", 1);
        IllegalStateException cause = new IllegalStateException("disk on fire");
        WatermarkStore<Void> failing = new WatermarkStore<>() {
            @Override
            public PartitionState load(String groupId, TopicPartition partition) {
                throw cause;
            }

            @Override
            public void commit(String groupId, Function<? super Void, List<PartitionProgress>> work) {
                throw new AssertionError("nothing to commit");
            }
        };

        Throwable failure = runToFailure(FencedConsumer.builder(new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(newGroup("load-fails")))
                .topics(topic)
                .watermarkStore(failing)
                .handler((record, token) -> {}));

        assertThat(failure).isInstanceOf(WatermarkStoreException.class).hasCause(cause);
        assertThat(failure.getMessage()).contains(topic + "-0").doesNotContain("User rebalance callback");
    }

    @Test
    void failsAtOnceNamingAMissingTopicOrDeadLetterTopicAndHowToCreateIt() throws Exception {
        String topic = "without-dlt-" + System.nanoTime();
        kafka().createTopic(topic, 1);

        Throwable noDeadLetterTopic = runToFailure(heapOnly(topic));
        Throwable noTopic = runToFailure(heapOnly("never-created-" + System.nanoTime()));

        assertThat(noDeadLetterTopic)
                .isInstanceOf(MissingTopicException.class)
                .hasMessageContaining("topic " + topic + ".dlt does not exist")
                .hasMessageContaining("dead-letter topic of " + topic)
                .hasMessageContaining("--create --topic " + topic + ".dlt");
        assertThat(noTopic).isInstanceOf(MissingTopicException.class).hasMessageContaining("is subscribed");
    }

    private static FencedConsumerBuilder<String, String> heapOnly(String topic) {
        return FencedConsumer.builder(new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(newGroup("topics")))
                .topics(topic)
                .heapOnlyWatermarksLostOnRestart()
                .handler((record, token) -> {});
    }

    static Throwable runToFailure(FencedConsumerBuilder<String, String> builder) throws Exception {
        try (FencedConsumer<String, String> consumer = builder.build()) {
            CompletableFuture<Void> stopped = consumer.start();
            try {
                stopped.get(60, TimeUnit.SECONDS);
                throw new AssertionError("the consumer stopped without a failure");
            } catch (ExecutionException e) {
                return e.getCause();
            }
        }
    }
}
