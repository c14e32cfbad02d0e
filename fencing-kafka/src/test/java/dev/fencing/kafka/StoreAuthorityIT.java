package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.kafka;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.producer;
import static dev.fencing.kafka.KafkaFixture.sendFenced;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencing.kafka.spi.PartitionProgress;
import dev.fencing.kafka.spi.PartitionState;
import dev.fencing.kafka.spi.WatermarkStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;

/**
 * Defects 2 and 8, and the topics check: the consumer refuses to go on from a store that is not
 * authoritative (behind the group's offset in Kafka, with or without a row for the partition), throws the
 * store's own failure from {@code run()}, and names a missing topic once it is still missing after a short grace.
 */
class StoreAuthorityIT {

    @Test
    void stopsWhenKafkasCommittedOffsetIsAheadOfTheStoreInsteadOfReapplyingRecords() throws Exception {
        // given: a member with the store handled "first"; a member without it then handled "second" (Kafka: 2)
        String topic = newTopic("authority", 1);
        String group = newGroup("authority");
        InMemoryWatermarkStore store = new InMemoryWatermarkStore();
        List<String> applied = Collections.synchronizedList(new ArrayList<>());
        try (KafkaProducer<String, String> producer = producer()) {
            sendFenced(producer, topic, "sku-1", "first", 3);
            try (FencedConsumer<String, String> withStore = withStore(group, topic, store, applied)) {
                withStore.start();
                await().atMost(Duration.ofSeconds(60)).until(() -> store.loadOffset(group, p0(topic)) == 1);
            }
            sendFenced(producer, topic, "sku-1", "second", 4);
        }
        KafkaFixture.moveCommittedOffset(group, p0(topic), 2);

        // when: a member with the store joins again
        Throwable failure = runUntilFailureOr(withStore(group, topic, store, applied), () -> applied.size() > 1);

        // then: it stops and says why; seeking back to the store's offset 1 would apply "second" again
        assertThat(applied).containsExactly("first");
        assertThat(failure)
                .isInstanceOf(StoreBehindKafkaException.class)
                .hasMessageContaining("Kafka's committed offset 2 is ahead of the watermark store's 1");
    }

    @Test
    void stopsWhenKafkasCommittedOffsetIsAheadOfAStoreWithNothingForThePartition() throws Exception {
        // given: two records a member without this store already handled (the group's Kafka offset is 2), then a
        // late one that only their watermark (4) refuses
        String topic = newTopic("authority", 1);
        String group = newGroup("authority");
        try (KafkaProducer<String, String> producer = producer()) {
            sendFenced(producer, topic, "sku-1", "first", 3);
            sendFenced(producer, topic, "sku-1", "second", 4);
            sendFenced(producer, topic, "sku-1", "late", 2);
        }
        KafkaFixture.moveCommittedOffset(group, p0(topic), 2);
        List<String> applied = Collections.synchronizedList(new ArrayList<>());

        // when: a member with an empty store joins
        Throwable failure = runUntilFailureOr(
                withStore(group, topic, new InMemoryWatermarkStore(), applied), () -> !applied.isEmpty());

        // then: it stops and says why, and applied nothing (reading on from Kafka's offset would apply "late")
        assertThat(applied).isEmpty();
        assertThat(failure)
                .isInstanceOf(StoreBehindKafkaException.class)
                .hasMessageContaining("Kafka's committed offset 2 is ahead of the watermark store's (none)");
    }

    private static TopicPartition p0(String topic) {
        return new TopicPartition(topic, 0);
    }

    private static FencedConsumer<String, String> withStore(
            String group, String topic, InMemoryWatermarkStore store, List<String> applied) {
        return FencedConsumer.builder(new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .topics(topic)
                .watermarkStore(store)
                .handler((record, token) -> applied.add(record.value()))
                .build();
    }

    /** Runs the consumer until its loop stops or {@code wrong} holds; returns what stopped it, or null. */
    private static Throwable runUntilFailureOr(FencedConsumer<String, String> consumer, BooleanSupplier wrong)
            throws Exception {
        try (consumer) {
            CompletableFuture<Void> stopped = consumer.start();
            await().atMost(Duration.ofSeconds(60)).until(() -> stopped.isDone() || wrong.getAsBoolean());
            if (!stopped.isDone()) {
                return null;
            }
            try {
                stopped.get();
                return null;
            } catch (ExecutionException e) {
                return e.getCause();
            }
        }
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
    void failsAfterAShortGraceNamingAMissingTopicOrDeadLetterTopicAndHowToCreateIt() throws Exception {
        String topic = "without-dlt-" + System.nanoTime();
        kafka().createTopic(topic, 1);

        Throwable noDeadLetterTopic = runToFailure(heapOnly(topic));
        String neverCreated = "never-created-" + System.nanoTime();
        Throwable noTopic = runToFailure(heapOnly(neverCreated));

        assertThat(noDeadLetterTopic)
                .isInstanceOf(MissingTopicException.class)
                .hasMessageContaining("topic " + topic + ".dlt does not exist")
                .hasMessageContaining("dead-letter topic of " + topic)
                .hasMessageContaining("--create --topic " + topic + ".dlt");
        assertThat(noTopic)
                .isInstanceOf(MissingTopicException.class)
                .hasMessageContaining("2 topics do not exist: " + neverCreated + " (it is subscribed")
                .hasMessageContaining("--create --topic " + neverCreated + ".dlt");
        assertThat(((MissingTopicException) noTopic).topics()).containsExactly(neverCreated, neverCreated + ".dlt");
    }

    @Test
    void aDeadLetterTopicMadeJustAfterTheCheckBeganIsFoundRatherThanReportedMissing() throws Exception {
        // given: a topic without its dead-letter topic, a built consumer and an admin client
        String topic = "late-dlt-" + System.nanoTime();
        kafka().createTopic(topic, 1);
        try (FencedConsumer<String, String> consumer = heapOnly(topic).build();
                Admin admin =
                        Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka().bootstrapServers()))) {
            // when: another thread makes the dead-letter topic half a second after the check began, the way an
            // application does (createTopics, without waiting for the brokers' metadata)
            CompletableFuture<Void> made = CompletableFuture.supplyAsync(
                            () -> admin.createTopics(List.of(new NewTopic(topic + ".dlt", 1, (short) 1)))
                                    .all(),
                            CompletableFuture.delayedExecutor(500, TimeUnit.MILLISECONDS))
                    .thenCompose(created -> created.toCompletionStage());
            consumer.checkTopics();

            // then: the check looked again and found it instead of failing on its first listing
            made.get(30, TimeUnit.SECONDS);
        }
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
