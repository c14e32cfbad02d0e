package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.header;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.readAll;
import static dev.fencing.kafka.KafkaFixture.token;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The key-parallel consumer with {@link PostgresWatermarkStore} and a transactional handler, its JVM killed
 * (SIGKILL) at random points while 8 records' transactions are open, and restarted: every record's effect
 * is applied exactly once, no stale one, although each kill leaves records applied above the partition's
 * stored offset (keys finish out of order), which the restart reads again.
 */
class KeyParallelCrashRestartIT {
    private static final int KEYS = 60;
    private static final int RECORDS = 3_000;
    private static final int KILLS = 3;
    private static PostgresFixture postgres;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_parallel_crash_it");
        postgres.jdbi.useHandle(h -> h.execute("CREATE TABLE applied (kafka_partition INT, kafka_offset BIGINT,"
                + " record_key TEXT, token BIGINT, value TEXT)"));
    }

    @AfterAll
    static void drop() {
        postgres.close();
    }

    @Test
    void killedAtRandomPointsThenRestartedAppliesEveryRecordOnceAndNoStaleOne() throws Exception {
        killThenFinish("parallel-crash", KILLS, KeyParallelCrashingConsumer.CONCURRENCY);
    }

    /**
     * A group switched to the serial consumer after a key-parallel member was killed: the serial member reads
     * again from the stored offset, and the records applied above it (their keys' applied offsets reach them)
     * are skipped rather than applied twice or dead-lettered.
     */
    @Test
    void aSerialConsumerTakingOverFromAKilledKeyParallelOneAppliesEveryRecordOnce() throws Exception {
        killThenFinish("serial-after-parallel", 1, 1);
    }

    /**
     * Runs key-parallel children killed {@code kills} times, then one with {@code finishConcurrency} to the end,
     * and checks every record applied exactly once and every stale one dead-lettered.
     */
    private static void killThenFinish(String name, int kills, int finishConcurrency) throws Exception {
        // given: each key gets three records per token (equal tokens are accepted, so only the key's applied
        // offset keeps a replayed one from being applied twice), and every 11th record from the second round on
        // is a late one under an older token
        postgres.jdbi.useHandle(h -> h.execute("TRUNCATE applied")); // the tests of this class run one at a time
        String topic = newTopic(name, 2);
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (int i = 0; i < RECORDS; i++) {
                int round = i / (KEYS * 3);
                long token = round > 0 && i % 11 == 5 ? round : round + 2;
                producer.send(FencedRecords.create(topic, "key-" + (i % KEYS), "r" + i, token));
            }
            producer.flush();
        }
        List<ConsumerRecord<String, String>> log = readAll(topic, RECORDS);
        KafkaFixture.Expected expected = KafkaFixture.expected(log);
        Set<String> expectedApplied = expected.applied();
        Set<String> expectedStale = expected.stale();
        assertThat(expectedStale).isNotEmpty();
        String group = newGroup(name);
        long seed = System.nanoTime();
        Random random = new Random(seed);

        // when: killed with SIGKILL at random points, then run to the end
        long appliedAboveStored = 0;
        // a kill that happened to leave nothing above the stored offset is followed by another (at most two more):
        // the finishing consumer must find records applied above it, or this test proves nothing
        for (int kill = 0; kill < kills || (appliedAboveStored == 0 && kill < kills + 2); kill++) {
            long before = appliedRows();
            long killAt = before + 150 + random.nextInt(500);
            Process child = startChild(topic, group, KeyParallelCrashingConsumer.CONCURRENCY);
            try {
                await().atMost(Duration.ofSeconds(120))
                        .pollInterval(Duration.ofMillis(5))
                        .until(() -> appliedRows() >= killAt || !child.isAlive());
                assertThat(child.isAlive())
                        .as("child alive at kill %d (seed %d)", kill, seed)
                        .isTrue();
            } finally {
                child.destroyForcibly(); // SIGKILL
                assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
            }
            appliedAboveStored = appliedAboveStoredOffset(group);
        }
        // the last kill must have left records applied above the stored offset, or this test proves nothing
        assertThat(appliedAboveStored)
                .as("records applied above the stored offset at the last kill")
                .isPositive();
        Process last = startChild(topic, group, finishConcurrency);
        try {
            await().atMost(Duration.ofSeconds(120))
                    .until(() -> storedOffsets(group).values().stream()
                                    .mapToLong(Long::longValue)
                                    .sum()
                            == RECORDS);
        } finally {
            last.destroyForcibly();
            last.waitFor(30, TimeUnit.SECONDS);
        }

        // then: each record applied exactly once, exactly the fresh ones; every stale one dead-lettered
        List<String> applied = postgres.jdbi.withHandle(
                h -> h.createQuery("SELECT kafka_partition || '@' || kafka_offset FROM applied")
                        .mapTo(String.class)
                        .list());
        assertThat(applied).as("seed %d", seed).doesNotHaveDuplicates();
        assertThat(new HashSet<>(applied)).as("seed %d", seed).isEqualTo(expectedApplied);
        Set<String> deadLettered = new HashSet<>();
        for (ConsumerRecord<String, String> deadLetter : readAll(topic + ".dlt", expectedStale.size())) {
            assertThat(header(deadLetter, DeadLetterHeaders.REASON)).isEqualTo("STALE_TOKEN");
            deadLettered.add(header(deadLetter, DeadLetterHeaders.ORIGIN_PARTITION) + "@"
                    + header(deadLetter, DeadLetterHeaders.ORIGIN_OFFSET));
        }
        assertThat(deadLettered).as("seed %d", seed).isEqualTo(expectedStale);
    }

    private static long appliedRows() {
        return postgres.jdbi.withHandle(h ->
                h.createQuery("SELECT count(*) FROM applied").mapTo(Long.class).one());
    }

    /** Applied records at or above their partition's stored offset: what a restart reads again. */
    private static long appliedAboveStoredOffset(String group) {
        return postgres.jdbi.withHandle(h -> h.createQuery("SELECT count(*) FROM applied a LEFT JOIN"
                        + " fencing.kafka_offset o ON o.kafka_partition = a.kafka_partition AND o.consumer_group = :g"
                        + " WHERE a.kafka_offset >= coalesce(o.next_offset, 0)")
                .bind("g", group)
                .mapTo(Long.class)
                .one());
    }

    private static Map<Integer, Long> storedOffsets(String group) {
        Map<Integer, Long> offsets = new HashMap<>();
        postgres.jdbi.useHandle(h -> h.createQuery(
                        "SELECT kafka_partition, next_offset FROM fencing.kafka_offset WHERE consumer_group = :g")
                .bind("g", group)
                .map((rs, ctx) -> Map.entry(rs.getInt(1), rs.getLong(2)))
                .forEach(e -> offsets.put(e.getKey(), e.getValue())));
        return offsets;
    }

    private static Process startChild(String topic, String group, int concurrency) throws IOException {
        String java = ProcessHandle.current().info().command().orElse("java");
        Path log = Files.createTempFile("parallel-crashing-consumer-", ".log");
        List<String> command = new ArrayList<>(List.of(
                java,
                "-Xmx256m",
                "-XX:TieredStopAtLevel=1",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-cp",
                System.getProperty("java.class.path"),
                KeyParallelCrashingConsumer.class.getName(),
                KafkaFixture.kafka().bootstrapServers(),
                postgres.database.jdbcUrl(),
                postgres.database.user(),
                postgres.database.password(),
                topic,
                group,
                String.valueOf(concurrency)));
        return new ProcessBuilder(command)
                .redirectError(log.toFile())
                .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .directory(new File(System.getProperty("user.dir")))
                .start();
    }
}
