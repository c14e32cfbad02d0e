package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.committed;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.sendFenced;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A topic deleted and created again under a consumer of it and of another topic, which has not polled the
 * topic since (its handler held, or the partition paused): Kafka's committed offsets of the group for the
 * topic's name are the new topic's, and no offset of the old log may reach them, neither with the other
 * topic's units, nor at a revocation, nor at the close. One that did would make the documented recovery
 * (deleting the group's rows for the topic) end in {@link StoreBehindKafkaException}.
 */
class RecreatedTopicKafkaOffsetsIT {
    private static RecreatedTopics fixture;

    @BeforeAll
    static void migrate() {
        fixture = new RecreatedTopics("kafka_recreated_offsets_it");
    }

    @AfterAll
    static void drop() {
        fixture.close();
    }

    @Test
    void serialUnitsOfAnotherTopicCommitNoOldOffsetToARecreatedTopicAndItsRowsAreThenAllARestartNeeds()
            throws Exception {
        // given: a serial consumer of t and u that applied t's three records (offset 3 saved and committed to
        // Kafka), then holds u-0 while t is deleted and created again, empty
        String t = newTopic("recreated-offsets-t", 1);
        String u = newTopic("recreated-offsets-u", 1);
        String group = newGroup("recreated-offsets-serial");
        send(t, "old-0", "old-1", "old-2");
        CountDownLatch holding = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        try (FencedConsumer<String, String> consumer = fixture.heldConsumer(
                        group, List.of(t, u), "u-0", holding, release)
                .build()) {
            CompletableFuture<Void> stopped = consumer.start();
            await().atMost(Duration.ofSeconds(60)).until(() -> committed(group, t) == 3);
            send(u, "u-0");
            assertThat(holding.await(60, TimeUnit.SECONDS)).isTrue();
            RecreatedTopics.recreateEmpty(t);

            // when: the handler returns and u's unit is saved and committed to Kafka
            release.countDown();
            await().atMost(Duration.ofSeconds(60)).until(() -> stopped.isDone() || committed(group, u) == 1);

            // then: the new t has no committed offset of the group; without the fix the unit's commit carried
            // t's finished offset 3 along with u's
            assertThat(consumer.failure()).as("what stopped the consumer").isNull();
            assertThat(committed(group, t))
                    .as("the group's committed offset of the new t")
                    .isZero();
        }
        // and the close commits none either
        assertThat(committed(group, t))
                .as("the group's committed offset of the new t after the close")
                .isZero();

        // when: a restart stops on the recreated topic, and the group's rows of it are deleted as it says
        assertThat(runUntilStoredOffset(group, List.of(t, u), t, 1)).isInstanceOf(TopicRecreatedException.class);
        fixture.deleteRows(group, t);
        send(t, "new-0");

        // then: the next start reads the new t from its beginning (with 3 committed in Kafka it stopped with
        // StoreBehindKafkaException)
        assertThat(runUntilStoredOffset(group, List.of(t, u), t, 1))
                .as("what stopped the consumer")
                .isNull();
        assertThat(fixture.values(t)).containsExactly("new-0", "old-0", "old-1", "old-2");
    }

    @Test
    void keyParallelProgressOfAnotherTopicCommitsNoOldOffsetToATopicRecreatedWhileItsPartitionWasPaused()
            throws Exception {
        // given: a key-parallel consumer of t and u that applied t's three records (offset 3 saved and
        // committed), then holds old-3, one record in flight being the partition's limit: t is paused, and the
        // consumer polls u only. old-4, sent once t paused, ends a fetch of t still waiting at the broker
        String t = newTopic("recreated-offsets-t", 1);
        String u = newTopic("recreated-offsets-u", 1);
        String group = newGroup("recreated-offsets-parallel");
        send(t, "old-0", "old-1", "old-2");
        CountDownLatch holding = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        try (FencedConsumer<String, String> consumer = fixture.heldConsumer(
                        group, List.of(t, u), "old-3", holding, release)
                .maxConcurrency(4)
                .maxInFlightPerPartition(1)
                .build()) {
            CompletableFuture<Void> stopped = consumer.start();
            await().atMost(Duration.ofSeconds(60)).until(() -> committed(group, t) == 3);
            send(t, "old-3");
            assertThat(holding.await(60, TimeUnit.SECONDS)).isTrue();
            await().atMost(Duration.ofSeconds(60)).until(() -> consumer.recordsInFlight() == 1);
            send(t, "old-4");
            RecreatedTopics.recreateEmpty(t);

            // when: u's record is applied and its progress saved and committed to Kafka
            send(u, "u-0");
            await().atMost(Duration.ofSeconds(60)).until(() -> stopped.isDone() || committed(group, u) == 1);

            // then: without the fix the progress commit carried t's finished offset 3 along with u's
            assertThat(consumer.failure()).as("what stopped the consumer").isNull();
            assertThat(committed(group, t))
                    .as("the group's committed offset of the new t")
                    .isZero();

            // and once old-3 is done, the check before its save stops the consumer
            release.countDown();
            await().atMost(Duration.ofSeconds(60)).until(stopped::isDone);
            assertThat(consumer.failure()).isInstanceOf(TopicRecreatedException.class);
        }
        assertThat(committed(group, t))
                .as("the group's committed offset of the new t after the close")
                .isZero();
    }

    @Test
    void aRevocationCommitsNoOldOffsetToATopicRecreatedUnderTheConsumer() throws Exception {
        // given: a serial consumer of t and u that applied t's three records (offset 3 saved and committed),
        // held u-0 while t was deleted and created again, empty, and then ran on (t has nothing new: no save
        // of t, so no check of its id)
        String t = newTopic("recreated-offsets-t", 1);
        String u = newTopic("recreated-offsets-u", 1);
        String group = newGroup("recreated-offsets-revoked");
        send(t, "old-0", "old-1", "old-2");
        CountDownLatch holding = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        try (FencedConsumer<String, String> first = fixture.heldConsumer(group, List.of(t, u), "u-0", holding, release)
                .build()) {
            CompletableFuture<Void> firstStopped = first.start();
            await().atMost(Duration.ofSeconds(60)).until(() -> committed(group, t) == 3);
            send(u, "u-0");
            assertThat(holding.await(60, TimeUnit.SECONDS)).isTrue();
            RecreatedTopics.recreateEmpty(t);
            release.countDown();

            // when: a second member joins: the first one's partitions are revoked, and the member assigned t
            // stops on its new id
            try (FencedConsumer<String, String> second = fixture.heldConsumer(
                            group, List.of(t, u), "none", new CountDownLatch(1), new CountDownLatch(0))
                    .build()) {
                CompletableFuture<Void> secondStopped = second.start();
                await().atMost(Duration.ofSeconds(60)).until(() -> firstStopped.isDone() || secondStopped.isDone());
                Throwable failure = firstStopped.isDone() ? first.failure() : second.failure();
                assertThat(failure).as("what stopped a member").isInstanceOf(TopicRecreatedException.class);

                // then: without the fix the revocation committed t's finished offset 3 to the new t
                assertThat(committed(group, t))
                        .as("the group's committed offset of the new t")
                        .isZero();
            }
        }
    }

    /** Runs a consumer until its loop stops or it stored {@code offset} of {@code topic}; returns what stopped it. */
    private static Throwable runUntilStoredOffset(String group, List<String> topics, String topic, long offset) {
        try (FencedConsumer<String, String> consumer = fixture.heldConsumer(
                        group, topics, "none", new CountDownLatch(1), new CountDownLatch(0))
                .build()) {
            CompletableFuture<Void> stopped = consumer.start();
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> stopped.isDone() || fixture.storedOffset(group, topic) == offset);
            return consumer.failure();
        }
    }

    /** Sends records of key k, each with a token one above the last (old-N and u-N: N + 1; new-N: 10 + N). */
    private static void send(String topic, String... values) {
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (String value : values) {
                int n = Integer.parseInt(value.substring(value.indexOf('-') + 1));
                sendFenced(producer, topic, "k", value, value.startsWith("new-") ? 10 + n : n + 1);
            }
        }
    }
}
