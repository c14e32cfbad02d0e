package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.header;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.readAll;
import static dev.fencing.kafka.KafkaFixture.token;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jdbi.v3.core.Handle;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Issue test 3: a consumer process is killed (SIGKILL) in the middle of a batch and restarted, with the
 * PostgreSQL store. No record's effect is applied twice and no stale record is accepted.
 */
class CrashRestartIT {
    private static final int KEYS = 20;
    private static final int RECORDS = 400;
    private static PostgresFixture postgres;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_crash_it");
        postgres.jdbi.useHandle(h -> h.execute("CREATE TABLE applied (kafka_partition INT, kafka_offset BIGINT,"
                + " record_key TEXT, token BIGINT, value TEXT)"));
    }

    @AfterAll
    static void drop() {
        postgres.close();
    }

    /** The effect of a record: one row, in the batch's transaction. */
    static void apply(Handle handle, ConsumerRecord<String, String> record, long token) {
        handle.createUpdate("INSERT INTO applied VALUES (:p, :o, :k, :t, :v)")
                .bind("p", record.partition())
                .bind("o", record.offset())
                .bind("k", record.key())
                .bind("t", token)
                .bind("v", record.value())
                .execute();
    }

    @Test
    void killedMidBatchThenRestartedAppliesEveryRecordOnceAndNoStaleOne() throws Exception {
        // given: 400 records over 20 keys, tokens rising per round, every 7th record a late one from 2 rounds back
        String topic = newTopic("crash", 2);
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (int i = 0; i < RECORDS; i++) {
                int round = i / KEYS;
                long token = i % 7 == 3 ? Math.max(1, round - 2) : round + 1;
                producer.send(FencedRecords.create(topic, "key-" + (i % KEYS), "r" + i, token));
            }
            producer.flush();
        }
        List<ConsumerRecord<String, String>> log = readAll(topic, RECORDS);
        KafkaFixture.Expected expected = KafkaFixture.expected(log);
        Set<String> expectedApplied = expected.applied();
        Set<String> expectedStale = expected.stale();
        assertThat(expectedStale).isNotEmpty();
        String group = newGroup("crash");

        // when: the first consumer process is killed while a batch's transaction is open
        Process child = startChild(topic, group, 150);
        String halted;
        try {
            halted = CompletableFuture.supplyAsync(() -> awaitLine(child, CrashingConsumer.HALTED))
                    .get(120, TimeUnit.SECONDS);
        } finally {
            child.destroyForcibly();
            assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
        }
        String[] parts = halted.split(" ");
        int handledBeforeKill = Integer.parseInt(parts[1]);
        int inOpenBatch = Integer.parseInt(parts[2]);
        assertThat(inOpenBatch).isGreaterThanOrEqualTo(5);

        // then: the open batch's effects are gone, the committed ones stay, and offsets match them
        await().atMost(Duration.ofSeconds(30)).until(() -> appliedRows() == handledBeforeKill - inOpenBatch);
        Map<Integer, Long> storedAtKill = storedOffsets(group, topic);
        long appliedBeyondStored = postgres.jdbi.withHandle(h -> h.createQuery(
                        "SELECT count(*) FROM applied a JOIN fencing.kafka_offset o ON o.kafka_partition = a.kafka_partition"
                                + " WHERE o.consumer_group = :g AND a.kafka_offset >= o.next_offset")
                .bind("g", group)
                .mapTo(Long.class)
                .one());
        assertThat(appliedBeyondStored).isZero();
        Map<String, Long> watermarksAtKill = new HashMap<>();
        postgres.jdbi.useHandle(h -> h.createQuery(
                        "SELECT record_key, fence_token FROM fencing.kafka_watermark WHERE consumer_group = :g")
                .bind("g", group)
                .map((rs, ctx) -> Map.entry(new String(rs.getBytes(1), StandardCharsets.UTF_8), rs.getLong(2)))
                .forEach(e -> watermarksAtKill.put(e.getKey(), e.getValue())));
        long refusedByWatermarksFromBeforeTheKill = log.stream()
                .filter(r -> storedAtKill.containsKey(r.partition()) && r.offset() >= storedAtKill.get(r.partition()))
                .filter(r -> token(r) < watermarksAtKill.getOrDefault(r.key(), 0L))
                .count();
        assertThat(refusedByWatermarksFromBeforeTheKill)
                .as("records after the restart point that only the stored watermarks can refuse")
                .isPositive();

        // given: the group's offsets in Kafka moved back to the start (once the killed member's session is gone),
        // so that only the seek to the database's offsets keeps committed records from being applied again
        await().atMost(Duration.ofSeconds(60))
                .pollInterval(Duration.ofMillis(500))
                .ignoreExceptions()
                .until(() -> {
                    KafkaFixture.moveCommittedOffset(group, new TopicPartition(topic, 0), 0);
                    KafkaFixture.moveCommittedOffset(group, new TopicPartition(topic, 1), 0);
                    return true;
                });

        // when: restarted
        try (FencedConsumer<String, String> restarted = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .topics(topic)
                .transactionalHandler(PostgresWatermarkStore.create(postgres.jdbi), CrashRestartIT::apply)
                .build()) {
            restarted.start();
            await().atMost(Duration.ofSeconds(90))
                    .until(() -> storedOffsets(group, topic).values().stream()
                                    .mapToLong(Long::longValue)
                                    .sum()
                            == RECORDS);
        }

        // then: each record applied exactly once, exactly the fresh ones
        List<String> applied = postgres.jdbi.withHandle(
                h -> h.createQuery("SELECT kafka_partition || '@' || kafka_offset FROM applied")
                        .mapTo(String.class)
                        .list());
        assertThat(applied).doesNotHaveDuplicates();
        assertThat(new HashSet<>(applied)).isEqualTo(expectedApplied);
        Set<String> deadLettered = new HashSet<>();
        for (ConsumerRecord<String, String> deadLetter : readAll(topic + ".dlt", expectedStale.size())) {
            assertThat(header(deadLetter, DeadLetterHeaders.REASON)).isEqualTo("STALE_TOKEN");
            deadLettered.add(header(deadLetter, DeadLetterHeaders.ORIGIN_PARTITION) + "@"
                    + header(deadLetter, DeadLetterHeaders.ORIGIN_OFFSET));
        }
        assertThat(deadLettered).isEqualTo(expectedStale);
    }

    private static long appliedRows() {
        return postgres.jdbi.withHandle(h ->
                h.createQuery("SELECT count(*) FROM applied").mapTo(Long.class).one());
    }

    private static Map<Integer, Long> storedOffsets(String group, String topic) {
        Map<Integer, Long> offsets = new HashMap<>();
        postgres.jdbi.useHandle(h -> h.createQuery("SELECT kafka_partition, next_offset FROM fencing.kafka_offset"
                        + " WHERE consumer_group = :g AND topic = :t")
                .bind("g", group)
                .bind("t", topic)
                .map((rs, ctx) -> Map.entry(rs.getInt(1), rs.getLong(2)))
                .forEach(e -> offsets.put(e.getKey(), e.getValue())));
        return offsets;
    }

    private static Process startChild(String topic, String group, int haltAfter) throws IOException {
        String java = ProcessHandle.current().info().command().orElse("java");
        Path log = Files.createTempFile("crashing-consumer-", ".log");
        List<String> command = new ArrayList<>(List.of(
                java,
                "-Xmx256m",
                "-XX:TieredStopAtLevel=1",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-cp",
                System.getProperty("java.class.path"),
                CrashingConsumer.class.getName(),
                KafkaFixture.kafka().bootstrapServers(),
                postgres.database.jdbcUrl(),
                postgres.database.user(),
                postgres.database.password(),
                topic,
                group,
                Integer.toString(haltAfter)));
        return new ProcessBuilder(command)
                .redirectError(log.toFile())
                .directory(new File(System.getProperty("user.dir")))
                .start();
    }

    private static String awaitLine(Process child, String prefix) {
        try (BufferedReader out =
                new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line = out.readLine(); line != null; line = out.readLine()) {
                if (line.startsWith(prefix)) {
                    return line;
                }
            }
            throw new IllegalStateException("child exited with " + child.waitFor() + " before printing " + prefix);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
