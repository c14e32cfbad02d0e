package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.kafka;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.sendFenced;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencing.jdbc.FencedTable;
import dev.fencing.kafka.spi.PartitionProgress;
import dev.fencing.kafka.spi.PartitionState;
import dev.fencing.kafka.spi.WatermarkStore;
import java.sql.SQLTransactionRollbackException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.statement.UnableToExecuteStatementException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A topic deleted and created again under the same name while the group's offsets and watermarks stay in the
 * store: the stored offset is past the new log's end, Kafka resets the position by {@code auto.offset.reset},
 * and the consumer would judge the new log's records by the old log's state. It stops instead, naming the
 * partition and both offsets.
 */
class TopicRecreatedIT {
    private static RecreatedTopics fixture;
    private static PostgresFixture postgres;

    @BeforeAll
    static void migrate() {
        fixture = new RecreatedTopics("kafka_recreated_it");
        postgres = fixture.postgres;
    }

    @AfterAll
    static void drop() {
        fixture.close();
    }

    @Test
    void keyParallelStopsOnARecreatedTopicInsteadOfSkippingItsRecordsAsAppliedBefore() throws Exception {
        // given: three records of one key applied by the key-parallel consumer (key k's applied offset 2, the
        // stored offset 3), then the topic deleted and created again with two newer records of k
        String topic = newTopic("recreated-parallel", 1);
        String group = newGroup("recreated-parallel");
        runOldTopic(group, topic, 4);
        recreate(topic, 2);
        forgetTopicIds(group);

        // when: the consumer starts again on the new topic, with a store that holds no topic id (written before
        // V104): the log's offsets are what tell it
        Throwable failure = runUntilFailureOrMovedOff(group, topic, 4);

        // then: it stops naming the partition and the offsets; without the check it took the new records at
        // offsets 0 and 1 for k's records applied before (at or below its applied offset 2) and skipped them,
        // neither applied nor dead-lettered
        assertThat(failure)
                .as("what stopped the consumer; applied: %s", fixture.values(topic))
                .isInstanceOf(LogBehindStoreException.class)
                .hasMessageContaining(topic + "-0")
                .hasMessageContaining("from offset 0, below the watermark store's offset 3");
        assertThat(fixture.values(topic)).containsExactly("old-0", "old-1", "old-2");
        assertThat(((LogBehindStoreException) failure).partition()).isEqualTo(new TopicPartition(topic, 0));
    }

    @Test
    void serialStopsOnARecreatedTopicInsteadOfJudgingItsRecordsByTheOldTopicsState() throws Exception {
        // given: the same, consumed by the serial consumer
        String topic = newTopic("recreated-serial", 1);
        String group = newGroup("recreated-serial");
        runOldTopic(group, topic, 1);
        recreate(topic, 2);
        forgetTopicIds(group);

        // when: as above, with no topic id stored
        Throwable failure = runUntilFailureOrMovedOff(group, topic, 1);

        // then: without the check it read the new log from 0 under the old log's watermarks and saved offset 2
        assertThat(failure)
                .as("what stopped the consumer; applied: %s", fixture.values(topic))
                .isInstanceOf(LogBehindStoreException.class)
                .hasMessageContaining(topic + "-0")
                .hasMessageContaining("from offset 0, below the watermark store's offset 3");
        assertThat(fixture.values(topic)).containsExactly("old-0", "old-1", "old-2");
        assertThat(fixture.storedOffset(group, topic)).isEqualTo(3);
    }

    @Test
    void aTopicRecreatedUnderARunningConsumerStopsItToo() throws Exception {
        // given: a running serial consumer that applied the old topic's three records
        String topic = newTopic("recreated-live", 1);
        String group = newGroup("recreated-live");
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (int i = 0; i < 3; i++) {
                sendFenced(producer, topic, "k", "old-" + i, i + 1);
            }
        }
        try (FencedConsumer<String, String> consumer = consumer(group, topic, 1)) {
            CompletableFuture<Void> stopped = consumer.start();
            await().atMost(Duration.ofSeconds(60)).until(() -> fixture.storedOffset(group, topic) == 3);

            // when: the topic is deleted and created again under it, with two newer records
            recreate(topic, 2);
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> stopped.isDone() || fixture.storedOffset(group, topic) != 3);

            // then: without the checks it applied new-0 and new-1 under the old topic's watermarks and stored 2.
            // This consumer polls while the topic is gone, so its group gives the partition up and assigns the new
            // topic's, where the topic id check stops it; one that polled the new log before that would be stopped
            // by the offset check. A consumer that does not poll while the topic is gone (a handler still running)
            // sees no rebalance, as Kafka's consumer does not compare topic ids: the check before each save stops
            // it (serialStopsOnATopicRecreatedWhileItsHandlerRan...)
            assertThat(consumer.failure())
                    .as("what stopped the consumer; applied: %s", fixture.values(topic))
                    .isInstanceOfAny(TopicRecreatedException.class, LogBehindStoreException.class);
            assertThat(fixture.values(topic)).containsExactly("old-0", "old-1", "old-2");
        }
    }

    @Test
    void serialStopsOnATopicRecreatedPastTheStoredOffsetInsteadOfSkippingItsFirstRecords() throws Exception {
        // given: the old topic's three records applied (stored offset 3), then the topic deleted and created
        // again with five newer records: the new log already reaches offset 3
        String topic = newTopic("recreated-past-serial", 1);
        String group = newGroup("recreated-past-serial");
        runOldTopic(group, topic, 1);
        Uuid oldId = topicId(topic);
        recreate(topic, 5);

        // when
        Throwable failure = runUntilFailureOrMovedOff(group, topic, 1);

        // then: without the check it sought the new log to 3, applied new-3 and new-4 and stored 5, skipping
        // new-0 to new-2
        assertStoppedAsRecreated(failure, group, topic, oldId);
        assertThat(fixture.storedOffset(group, topic)).isEqualTo(3);
    }

    @Test
    void keyParallelStopsOnATopicRecreatedPastTheStoredOffsetInsteadOfSkippingItsFirstRecords() throws Exception {
        // given: the same, consumed by the key-parallel consumer
        String topic = newTopic("recreated-past-parallel", 1);
        String group = newGroup("recreated-past-parallel");
        runOldTopic(group, topic, 4);
        Uuid oldId = topicId(topic);
        recreate(topic, 5);

        // when
        Throwable failure = runUntilFailureOrMovedOff(group, topic, 4);

        // then: without the check it applied new-3 and new-4 only
        assertStoppedAsRecreated(failure, group, topic, oldId);
        assertThat(fixture.storedOffset(group, topic)).isEqualTo(3);
    }

    @Test
    void serialStopsOnATopicRecreatedWhileItsHandlerRanInsteadOfReadingTheNewLogFromItsPosition() throws Exception {
        // given: the old topic's three records applied (stored offset 3), then a fourth whose handler is held
        String topic = newTopic("recreated-held-serial", 1);
        String group = newGroup("recreated-held-serial");
        runOldTopic(group, topic, 1);
        sendMore(topic, "old-3");
        Uuid oldId = topicId(topic);
        CountDownLatch holding = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        try (FencedConsumer<String, String> consumer =
                heldConsumer(group, topic, 1, "old-3", holding, release).build()) {
            CompletableFuture<Void> stopped = consumer.start();
            assertThat(holding.await(60, TimeUnit.SECONDS)).isTrue();

            // when: the topic is deleted and created again with six newer records while the handler runs (the
            // consumer does not poll: it is assigned nothing new), then the handler returns
            recreate(topic, 6);
            release.countDown();
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> stopped.isDone() || fixture.storedOffset(group, topic) == 6);

            // then: without the check the unit saved offset 4, and the consumer read the new log on from there,
            // applied new-4 and new-5 and saved 6, skipping new-0 to new-3 (neither handled nor dead-lettered)
            assertStoppedAsRecreated(consumer.failure(), group, topic, oldId);
            assertThat(fixture.storedOffset(group, topic)).isEqualTo(3);
        }
    }

    @Test
    void aStoreKeepingNoTopicIdsStillStopsAConsumerThatTookItsPartitionsAgainAfterTheTopicWasRecreatedUnderIt()
            throws Exception {
        // given: a serial consumer on a store that keeps no topic ids, which applied the old topic's three records
        // (stored offset 3) and holds old-3 while the topic is deleted and created again with six newer records;
        // old-3's handler then fails once with a transient failure, so the consumer rolls the unit back and takes
        // its partitions again after the back-off
        String topic = newTopic("recreated-idless-retaken", 1);
        String group = newGroup("recreated-idless-retaken");
        runOldTopic(group, topic, 1);
        sendMore(topic, "old-3");
        Uuid oldId = topicId(topic);
        CountDownLatch holding = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicBoolean failedOnce = new AtomicBoolean();
        PostgresWatermarkStore postgresStore = PostgresWatermarkStore.create(postgres.jdbi);
        WatermarkStore<Handle> idless = new WatermarkStore<>() {
            @Override
            public PartitionState load(String groupId, TopicPartition partition) {
                return postgresStore.load(groupId, partition);
            }

            @Override
            public void commit(String groupId, Function<? super Handle, List<PartitionProgress>> work) {
                postgresStore.commit(groupId, work);
            }

            @Override
            public void lockPartition(Handle unit, String groupId, TopicPartition partition, long expectedOffset) {
                postgresStore.lockPartition(unit, groupId, partition, expectedOffset);
            }
        };
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .topics(topic)
                .transactionalHandler(idless, (handle, record, token) -> {
                    if (record.value().equals("old-3") && failedOnce.compareAndSet(false, true)) {
                        holding.countDown();
                        try {
                            if (!release.await(60, TimeUnit.SECONDS)) {
                                throw new AssertionError("not released");
                            }
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                            throw new AssertionError(e);
                        }
                        throw new UnableToExecuteStatementException(
                                new SQLTransactionRollbackException("could not serialize access", "40001"), null);
                    }
                    RecreatedTopics.apply(handle, record, token);
                })
                .build()) {
            CompletableFuture<Void> stopped = consumer.start();
            assertThat(holding.await(60, TimeUnit.SECONDS)).isTrue();

            // when
            recreate(topic, 6);
            release.countDown();
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> stopped.isDone() || fixture.storedOffset(group, topic) != 3);

            // then: it stops naming both ids; without remembering the id it found when it first took the
            // partitions, it took the new one as the topic's when it took them again, sought the new log to the
            // stored 3, applied new-3 to new-5 and saved 6, skipping new-0 to new-2 (and old-3 never ran)
            assertThat(failedOnce).isTrue();
            assertStoppedAsRecreated(consumer.failure(), group, topic, oldId);
            assertThat(fixture.storedOffset(group, topic)).isEqualTo(3);
        }
    }

    @Test
    void aConsumerStoppedByATopicRecreatedUnderItCommitsNoOldOffsetToTheNewTopicAndStartsAfreshOnceItsRowsAreGone()
            throws Exception {
        // given: a serial consumer that applied the old topic's three records in a unit (offset 3 saved and
        // committed to Kafka), then holds old-3 while the topic is deleted and created again with six newer records
        String topic = newTopic("recreated-held-then-cleared", 1);
        String group = newGroup("recreated-held-then-cleared");
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (int i = 0; i < 3; i++) {
                sendFenced(producer, topic, "k", "old-" + i, i + 1);
            }
        }
        CountDownLatch holding = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        try (FencedConsumer<String, String> consumer =
                heldConsumer(group, topic, 1, "old-3", holding, release).build()) {
            CompletableFuture<Void> stopped = consumer.start();
            await().atMost(Duration.ofSeconds(60)).until(() -> fixture.storedOffset(group, topic) == 3);
            sendMore(topic, "old-3");
            assertThat(holding.await(60, TimeUnit.SECONDS)).isTrue();
            recreate(topic, 6);
            release.countDown();
            await().atMost(Duration.ofSeconds(60)).until(stopped::isDone);
            assertThat(consumer.failure()).isInstanceOf(TopicRecreatedException.class);
        }

        // then: the new topic has no committed offset of the group in Kafka; without forgetting the old log's
        // finished offset the consumer committed 3 to it when it closed
        assertThat(KafkaFixture.committed(group, topic)).isZero();

        // when: the group's rows for the topic are deleted, as the exception says, and the consumer starts again
        postgres.jdbi.useHandle(h -> {
            for (String table : List.of("kafka_offset", "kafka_watermark", "kafka_topic")) {
                h.execute("DELETE FROM fencing." + table + " WHERE consumer_group = ? AND topic = ?", group, topic);
            }
        });
        Throwable failure = runUntilStoredOffset(group, topic, 1, 6);

        // then: it reads the new topic from its beginning (with 3 committed in Kafka it stopped with
        // StoreBehindKafkaException instead)
        assertThat(failure).as("what stopped the consumer").isNull();
        assertThat(fixture.values(topic))
                .containsExactly("new-0", "new-1", "new-2", "new-3", "new-4", "new-5", "old-0", "old-1", "old-2");
    }

    @Test
    void fencedRowHandlerStopsOnATopicRecreatedPastTheStoredOffsetInsteadOfSkippingItsFirstRecords() throws Exception {
        // given: a fenced row consumer that applied the old topic's three records to row k (stored offset 3), then
        // the topic deleted and created again with five newer records: the new log already reaches offset 3
        String table = "recreated_rows_" + UUID.randomUUID().toString().substring(0, 8);
        postgres.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE " + table + " (sku TEXT PRIMARY KEY, value TEXT NOT NULL)");
            h.execute("INSERT INTO " + table + " VALUES ('k', 'none')");
            h.execute("SELECT fencing.protect_table('" + table + "')");
        });
        FencedRowHandler<String, String> rows = FencedRowHandler.<String, String>builder(
                        FencedTable.builder().table(table).keyColumns("sku").build(postgres.jdbi))
                .columns("value")
                .values(record -> new Object[] {record.value()})
                .build();
        String topic = newTopic("recreated-past-rows", 1);
        String group = newGroup("recreated-past-rows");
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (int i = 0; i < 3; i++) {
                sendFenced(producer, topic, "k", "old-" + i, i + 1);
            }
        }
        try (FencedConsumer<String, String> consumer = fencedRowConsumer(group, topic, rows)) {
            consumer.start();
            await().atMost(Duration.ofSeconds(60)).until(() -> fixture.storedOffset(group, topic) == 3);
        }
        Uuid oldId = topicId(topic);
        recreate(topic, 5);

        // when
        Throwable failure;
        try (FencedConsumer<String, String> consumer = fencedRowConsumer(group, topic, rows)) {
            CompletableFuture<Void> stopped = consumer.start();
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> stopped.isDone() || fixture.storedOffset(group, topic) != 3);
            failure = consumer.failure();
        }

        // then: the first run recorded the topic's id, and the second stopped on the new one; without the fenced
        // row store passing the ids on, it recorded none, sought the new log to 3, wrote new-3 and new-4 to the row
        // and stored 5, skipping new-0 to new-2
        String row = postgres.jdbi.withHandle(
                h -> h.createQuery("SELECT value || '@' || last_fence_token FROM " + table + " WHERE sku = 'k'")
                        .mapTo(String.class)
                        .one());
        assertThat(failure)
                .as("what stopped the consumer; row k: %s", row)
                .isInstanceOf(TopicRecreatedException.class)
                .hasMessageContaining("topic id " + oldId + ", but the topic's id is now " + topicId(topic));
        assertThat(recordedTopicId(group, topic)).contains(oldId);
        assertThat(row).isEqualTo("old-2@3");
        assertThat(fixture.storedOffset(group, topic)).isEqualTo(3);
    }

    @Test
    void keyParallelStopsOnATopicRecreatedWhileItsPartitionWasPausedInsteadOfReadingTheNewLogFromItsPosition()
            throws Exception {
        // given: the same, consumed by the key-parallel consumer, whose partition is paused while old-3 runs (one
        // record in flight is its limit): it polls, but fetches nothing of the partition and sees no rebalance.
        // old-4, sent once it paused, ends a fetch of the partition still waiting at the broker, which would
        // otherwise see the topic gone; the consumer keeps it buffered
        String topic = newTopic("recreated-held-parallel", 1);
        String group = newGroup("recreated-held-parallel");
        runOldTopic(group, topic, 4);
        sendMore(topic, "old-3");
        Uuid oldId = topicId(topic);
        CountDownLatch holding = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        try (FencedConsumer<String, String> consumer = heldConsumer(group, topic, 4, "old-3", holding, release)
                .maxInFlightPerPartition(1)
                .build()) {
            CompletableFuture<Void> stopped = consumer.start();
            assertThat(holding.await(60, TimeUnit.SECONDS)).isTrue();
            await().atMost(Duration.ofSeconds(60)).until(() -> consumer.recordsInFlight() == 1);
            sendMore(topic, "old-4");

            // when
            recreate(topic, 7);
            release.countDown();
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> stopped.isDone() || fixture.storedOffset(group, topic) == 7);

            // then: old-3 was applied in its own transaction; without the check the consumer saved offset 4, read
            // the new log on from there, applied new-4 to new-6 and saved 7, skipping new-0 to new-3
            Uuid newId = topicId(topic);
            assertThat(consumer.failure())
                    .as("what stopped the consumer; applied: %s", fixture.values(topic))
                    .isInstanceOf(TopicRecreatedException.class)
                    .hasMessageContaining("topic id " + oldId + ", but the topic's id is now " + newId);
            assertThat(fixture.values(topic)).containsExactly("old-0", "old-1", "old-2", "old-3");
            assertThat(fixture.storedOffset(group, topic)).isEqualTo(3);
        }
    }

    @Test
    void aRestartOnTheSameTopicResumesWhereTheStoreLeftOffInBothModes() throws Exception {
        for (int concurrency : new int[] {1, 4}) {
            // given: the old topic's three records applied, its id recorded, two more records sent
            String topic = newTopic("same-topic-" + concurrency, 1);
            String group = newGroup("same-topic-" + concurrency);
            runOldTopic(group, topic, concurrency);
            assertThat(recordedTopicId(group, topic)).contains(topicId(topic));
            sendMore(topic, "old-3", "old-4");

            // when
            Throwable failure = runUntilStoredOffset(group, topic, concurrency, 5);

            // then: no false alarm; the records after the stored offset are applied once each
            assertThat(failure).as("concurrency %s", concurrency).isNull();
            assertThat(fixture.values(topic)).containsExactly("old-0", "old-1", "old-2", "old-3", "old-4");
        }
    }

    @Test
    void aStoreWrittenBeforeTopicIdsWereKeptResumesAndRecordsTheTopicsId() throws Exception {
        // given: progress stored with no topic id (as a store of before V104 holds it)
        String topic = newTopic("no-id-yet", 1);
        String group = newGroup("no-id-yet");
        runOldTopic(group, topic, 1);
        forgetTopicIds(group);
        sendMore(topic, "old-3");

        // when
        Throwable failure = runUntilStoredOffset(group, topic, 1, 4);

        // then: it resumed at the stored offset and recorded the topic's current id
        assertThat(failure).isNull();
        assertThat(fixture.values(topic)).containsExactly("old-0", "old-1", "old-2", "old-3");
        assertThat(recordedTopicId(group, topic)).contains(topicId(topic));
    }

    @Test
    void theInMemoryStoreStopsAConsumerOnATopicRecreatedPastItsOffsetToo() throws Exception {
        // given: a serial consumer on an in-memory store applied the old topic's three records; the topic is
        // deleted and created again with five newer records
        String topic = newTopic("recreated-past-memory", 1);
        String group = newGroup("recreated-past-memory");
        InMemoryWatermarkStore store = new InMemoryWatermarkStore();
        List<String> handled = new CopyOnWriteArrayList<>();
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (int i = 0; i < 3; i++) {
                sendFenced(producer, topic, "k", "old-" + i, i + 1);
            }
        }
        TopicPartition partition = new TopicPartition(topic, 0);
        try (FencedConsumer<String, String> consumer = inMemoryConsumer(group, topic, store, handled)) {
            consumer.start();
            await().atMost(Duration.ofSeconds(60)).until(() -> store.loadOffset(group, partition) == 3);
        }
        Uuid oldId = topicId(topic);
        recreate(topic, 5);

        // when: a consumer of the group starts again on the same store
        try (FencedConsumer<String, String> consumer = inMemoryConsumer(group, topic, store, handled)) {
            CompletableFuture<Void> stopped = consumer.start();
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> stopped.isDone() || store.loadOffset(group, partition) != 3);

            // then: without the check it read on from offset 3 and handled new-3 and new-4 only
            assertThat(consumer.failure())
                    .as("what stopped the consumer; handled: %s", handled)
                    .isInstanceOf(TopicRecreatedException.class)
                    .hasMessageContaining(group)
                    .hasMessageContaining(oldId.toString())
                    .hasMessageContaining(topicId(topic).toString());
            assertThat(handled).containsExactly("old-0", "old-1", "old-2");
        }
    }

    @Test
    void aTopicDeletedWhileTheConsumerWaitsToRetryDoesNotStopItOnItsOtherTopic() throws Exception {
        // given: a serial consumer of two topics whose handler holds a's first record, then fails it (a failure
        // the consumer retries), while topic b is deleted: its partition is still in the consumer's assignment
        // when the partitions are taken again after the back-off, before any poll could revoke it
        String a = newTopic("kept", 1);
        String b = newTopic("deleted", 1);
        String group = newGroup("deleted-while-retrying");
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            sendFenced(producer, a, "k", "a-0", 1);
        }
        CountDownLatch holding = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicBoolean failedOnce = new AtomicBoolean();
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .topics(a, b)
                .retryBackoff(Duration.ofMillis(100), Duration.ofMillis(500))
                .retryMaxTime(Duration.ofSeconds(5))
                .retryHandlerFailures(e -> e instanceof IllegalStateException)
                .transactionalHandler(PostgresWatermarkStore.create(postgres.jdbi), (handle, record, token) -> {
                    if (!failedOnce.getAndSet(true)) {
                        holding.countDown();
                        try {
                            if (!release.await(60, TimeUnit.SECONDS)) {
                                throw new AssertionError("not released");
                            }
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                            throw new AssertionError(e);
                        }
                        throw new IllegalStateException("fails once");
                    }
                    RecreatedTopics.apply(handle, record, token);
                })
                .build()) {
            CompletableFuture<Void> stopped = consumer.start();
            assertThat(holding.await(60, TimeUnit.SECONDS)).isTrue();
            RecreatedTopics.deleteTopic(b);

            // when: the handler's failure is retried
            release.countDown();
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> stopped.isDone() || fixture.values(a).contains("a-0"));

            // then: without the check of the topic Kafka no longer has, taking the partitions again failed on
            // the description of b, and again after each back-off (no poll between them gave b up) until the
            // retry time had passed: the consumer stopped, a-0 never applied
            assertThat(consumer.failure()).as("what stopped the consumer").isNull();
            assertThat(fixture.values(a)).containsExactly("a-0");
        }
    }

    /** A consumer whose handler, at the record {@code heldValue}, counts down {@code holding} and waits for {@code release}. */
    private static FencedConsumerBuilder<String, String> heldConsumer(
            String group,
            String topic,
            int concurrency,
            String heldValue,
            CountDownLatch holding,
            CountDownLatch release) {
        FencedConsumerBuilder<String, String> builder =
                fixture.heldConsumer(group, List.of(topic), heldValue, holding, release);
        if (concurrency > 1) {
            builder.maxConcurrency(concurrency);
        }
        return builder;
    }

    private static FencedConsumer<String, String> inMemoryConsumer(
            String group, String topic, InMemoryWatermarkStore store, List<String> handled) {
        return FencedConsumer.builder(new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .topics(topic)
                .watermarkStore(store)
                .handler((record, token) -> handled.add(record.value()))
                .build();
    }

    private static void assertStoppedAsRecreated(Throwable failure, String group, String topic, Uuid oldId)
            throws Exception {
        Uuid newId = topicId(topic);
        assertThat(newId).isNotEqualTo(oldId);
        assertThat(failure)
                .as("what stopped the consumer; applied: %s", fixture.values(topic))
                .isInstanceOf(TopicRecreatedException.class)
                .hasMessageContaining("group " + group + " topic " + topic)
                .hasMessageContaining("topic id " + oldId + ", but the topic's id is now " + newId)
                .hasMessageContaining("delete the group's rows for the topic");
        TopicRecreatedException recreated = (TopicRecreatedException) failure;
        assertThat(recreated.storedId()).isEqualTo(oldId);
        assertThat(recreated.currentId()).isEqualTo(newId);
        assertThat(fixture.values(topic)).containsExactly("old-0", "old-1", "old-2");
    }

    /** Deletes the group's topic ids: the store is then as one written before V104. */
    private static void forgetTopicIds(String group) {
        postgres.jdbi.useHandle(h -> h.execute("DELETE FROM fencing.kafka_topic WHERE consumer_group = ?", group));
    }

    private static void sendMore(String topic, String... values) {
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (String value : values) {
                sendFenced(producer, topic, "k", value, 3 + Integer.parseInt(value.substring(4)));
            }
        }
    }

    /** Runs the consumer until its loop stops or it stored {@code offset}; returns what stopped it, or null. */
    private static Throwable runUntilStoredOffset(String group, String topic, int concurrency, long offset)
            throws Exception {
        try (FencedConsumer<String, String> consumer = consumer(group, topic, concurrency)) {
            CompletableFuture<Void> stopped = consumer.start();
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> stopped.isDone() || fixture.storedOffset(group, topic) == offset);
            return consumer.failure();
        }
    }

    private static Uuid topicId(String topic) throws Exception {
        try (Admin admin =
                Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka().bootstrapServers()))) {
            return admin.describeTopics(List.of(topic))
                    .allTopicNames()
                    .get(30, TimeUnit.SECONDS)
                    .get(topic)
                    .topicId();
        }
    }

    private static Optional<Uuid> recordedTopicId(String group, String topic) {
        return postgres.jdbi.withHandle(h -> h.createQuery(
                        "SELECT topic_id::text FROM fencing.kafka_topic" + " WHERE consumer_group = :g AND topic = :t")
                .bind("g", group)
                .bind("t", topic)
                .mapTo(String.class)
                .findOne()
                .map(UUID::fromString)
                .map(id -> new Uuid(id.getMostSignificantBits(), id.getLeastSignificantBits())));
    }

    private static void runOldTopic(String group, String topic, int concurrency) {
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (int i = 0; i < 3; i++) {
                sendFenced(producer, topic, "k", "old-" + i, i + 1);
            }
        }
        try (FencedConsumer<String, String> consumer = consumer(group, topic, concurrency)) {
            consumer.start();
            await().atMost(Duration.ofSeconds(60)).until(() -> fixture.storedOffset(group, topic) == 3);
        }
        assertThat(fixture.values(topic)).containsExactly("old-0", "old-1", "old-2");
    }

    /** Deletes the topic and creates it again with {@code records} newer records of key k. */
    private static void recreate(String topic, int records) throws Exception {
        RecreatedTopics.recreateEmpty(topic);
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (int i = 0; i < records; i++) {
                sendFenced(producer, topic, "k", "new-" + i, 10 + i);
            }
        }
    }

    /**
     * Runs the consumer until its loop stops, or until it saved an offset other than 3 (it consumed the new
     * log); returns what stopped it, or null.
     */
    private static Throwable runUntilFailureOrMovedOff(String group, String topic, int concurrency) throws Exception {
        try (FencedConsumer<String, String> consumer = consumer(group, topic, concurrency)) {
            CompletableFuture<Void> stopped = consumer.start();
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> stopped.isDone() || fixture.storedOffset(group, topic) != 3);
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

    private static FencedConsumer<String, String> consumer(String group, String topic, int concurrency) {
        FencedConsumerBuilder<String, String> builder = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .topics(topic);
        if (concurrency > 1) {
            builder.maxConcurrency(concurrency);
        }
        return builder.transactionalHandler(PostgresWatermarkStore.create(postgres.jdbi), RecreatedTopics::apply)
                .build();
    }

    private static FencedConsumer<String, String> fencedRowConsumer(
            String group, String topic, FencedRowHandler<String, String> rows) {
        return FencedConsumer.builder(new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .topics(topic)
                .fencedRowHandler(PostgresWatermarkStore.create(postgres.jdbi), rows)
                .build();
    }
}
