package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.header;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.readAll;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencing.jdbc.FencedTable;
import dev.fencing.kafka.internal.FencedRowUnits;
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
import java.util.Set;
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
 * A consumer with a {@link FencedRowHandler} is killed (SIGKILL) while its unit's row updates are sent, before
 * the unit commits, and restarted: each fresh record is applied to its row once, no stale one ever is, and no
 * watermark row is written. An audit trigger on the table records every update the rows took, in the updating
 * transaction (a rolled-back unit leaves none); for one chosen record it first waits on an advisory lock the
 * test holds, which is how the test catches the unit with its updates sent and not committed.
 */
class FencedRowCrashRestartIT {
    private static final int KEYS = 128;
    private static final int RECORDS = 1280;
    private static final int HOLD = 4242;
    private static PostgresFixture postgres;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_rows_crash_it");
        postgres.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE account (id TEXT PRIMARY KEY, last_value TEXT)");
            h.execute("INSERT INTO account SELECT 'key-' || g, NULL FROM generate_series(0, " + (KEYS - 1) + ") AS g");
            h.execute("SELECT fencing.protect_table('account')");
            h.execute(
                    "CREATE TABLE account_audit (id TEXT, last_value TEXT, token BIGINT, tx BIGINT, stmt TIMESTAMPTZ)");
            h.execute("CREATE TABLE hold_on (last_value TEXT)");
            h.execute("CREATE FUNCTION audit_account() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                    + " INSERT INTO account_audit VALUES (NEW.id, NEW.last_value, NEW.last_fence_token,"
                    + " txid_current(), statement_timestamp());"
                    + " IF EXISTS (SELECT FROM hold_on WHERE last_value = NEW.last_value) THEN"
                    + " PERFORM pg_advisory_xact_lock_shared(" + HOLD + "); END IF; RETURN NULL; END $$");
            h.execute("CREATE TRIGGER audit AFTER UPDATE ON account FOR EACH ROW EXECUTE FUNCTION audit_account()");
        });
    }

    @AfterAll
    static void drop() {
        postgres.close();
    }

    @Test
    void killedInsideAUnitThenRestartedAppliesEveryFreshRecordToItsRowOnceAndNoStaleOne() throws Exception {
        // given: 1,280 records over 128 keys, tokens rising per round, every 7th record a late one from 2 rounds back
        String topic = newTopic("rows-crash", 2);
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
        Map<String, String> positionOfValue = new HashMap<>();
        for (ConsumerRecord<String, String> record : log) {
            positionOfValue.put(record.value(), record.partition() + "@" + record.offset());
        }
        assertThat(expected.stale()).isNotEmpty();
        String group = newGroup("rows-crash");

        // given: a fresh record past the first few units, on whose row update the first consumer will wait
        String held = null;
        for (int i = 800; held == null; i++) {
            if (expected.applied().contains(positionOfValue.get("r" + i))) {
                held = "r" + i;
            }
        }
        String heldValue = held;
        postgres.jdbi.useHandle(h -> h.execute("INSERT INTO hold_on VALUES (?)", heldValue));
        Handle holder = postgres.jdbi.open();
        holder.createQuery("SELECT pg_advisory_lock(" + HOLD + ")")
                .mapTo(String.class)
                .one();

        // when: the first consumer process is killed while its unit waits there, its updates sent, not committed
        Process child = startChild(topic, group);
        int waiting;
        try {
            waiting = await().atMost(Duration.ofSeconds(120)).until(() -> waitingBackend(), pid -> pid > 0);
        } finally {
            child.destroyForcibly();
            assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
            holder.createQuery("SELECT pg_advisory_unlock(" + HOLD + ")")
                    .mapTo(Boolean.class)
                    .one();
            holder.close();
        }
        // the killed unit's backend runs on to where it needs its client, finds it gone, and rolls back
        await().atMost(Duration.ofSeconds(60)).until(() -> !backendAlive(waiting));

        // then: what the rows took is exactly the committed units' records, none at or past a stored offset
        Map<Integer, Long> storedAtKill = storedOffsets(group, topic);
        List<String> appliedAtKill = appliedPositions(positionOfValue);
        assertThat(appliedAtKill).isNotEmpty().doesNotContain(positionOfValue.get(heldValue));
        assertThat(appliedAtKill)
                .allMatch(position -> offsetOf(position) < storedAtKill.getOrDefault(partitionOf(position), 0L));

        // when: restarted (once the killed member's session is gone, the group's Kafka offsets moved back to the
        // start, so that only the store's offsets keep committed records from being applied again)
        await().atMost(Duration.ofSeconds(60))
                .pollInterval(Duration.ofMillis(500))
                .ignoreExceptions()
                .until(() -> {
                    KafkaFixture.moveCommittedOffset(group, new TopicPartition(topic, 0), 0);
                    KafkaFixture.moveCommittedOffset(group, new TopicPartition(topic, 1), 0);
                    return true;
                });
        FencedTable accounts =
                FencedTable.builder().table("account").keyColumns("id").build(postgres.jdbi);
        try (FencedConsumer<String, String> restarted = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .topics(topic)
                .fencedRowHandler(
                        PostgresWatermarkStore.create(postgres.jdbi),
                        FencedRowHandler.<String, String>builder(accounts)
                                .columns("last_value")
                                .values(record -> new Object[] {record.value()})
                                .build())
                .build()) {
            restarted.start();
            await().atMost(Duration.ofSeconds(90))
                    .until(() -> storedOffsets(group, topic).values().stream()
                                    .mapToLong(Long::longValue)
                                    .sum()
                            == RECORDS);
        }

        // then: each fresh record applied to its row exactly once, no stale one, every stale one dead-lettered
        List<String> applied = appliedPositions(positionOfValue);
        assertThat(applied).doesNotHaveDuplicates();
        assertThat(new HashSet<>(applied)).isEqualTo(expected.applied());
        Set<String> deadLettered = new HashSet<>();
        for (ConsumerRecord<String, String> deadLetter :
                readAll(topic + ".dlt", expected.stale().size())) {
            assertThat(header(deadLetter, DeadLetterHeaders.REASON)).isEqualTo("STALE_TOKEN");
            deadLettered.add(header(deadLetter, DeadLetterHeaders.ORIGIN_PARTITION) + "@"
                    + header(deadLetter, DeadLetterHeaders.ORIGIN_OFFSET));
        }
        assertThat(deadLettered).isEqualTo(expected.stale());
        // the rows were the watermarks: none was written for the group
        long watermarkRows = postgres.jdbi.withHandle(
                h -> h.createQuery("SELECT count(*) FROM fencing.kafka_watermark WHERE consumer_group = :g")
                        .bind("g", group)
                        .mapTo(Long.class)
                        .one());
        assertThat(watermarkRows).isZero();
        // and the units' rounds were large enough to be written as batch statements, many rows a statement
        int largestStatement = postgres.jdbi.withHandle(h -> h.createQuery(
                        "SELECT max(n) FROM (SELECT count(*) AS n FROM account_audit GROUP BY tx, stmt) AS s")
                .mapTo(Integer.class)
                .one());
        assertThat(largestStatement).isGreaterThanOrEqualTo(FencedRowUnits.MIN_STATEMENT_ROWS);
    }

    /** The pid of a backend waiting on the test's advisory lock, or 0. */
    private static int waitingBackend() {
        return postgres.jdbi.withHandle(h -> h.createQuery("SELECT coalesce(max(pid), 0) FROM pg_stat_activity"
                        + " WHERE wait_event_type = 'Lock' AND wait_event = 'advisory'"
                        + " AND (query LIKE 'UPDATE%' OR query LIKE 'WITH applied AS (UPDATE%')")
                .mapTo(Integer.class)
                .one());
    }

    private static boolean backendAlive(int pid) {
        return postgres.jdbi.withHandle(h -> h.createQuery("SELECT count(*) FROM pg_stat_activity WHERE pid = :pid")
                        .bind("pid", pid)
                        .mapTo(Integer.class)
                        .one())
                > 0;
    }

    private static int partitionOf(String position) {
        return Integer.parseInt(position.substring(0, position.indexOf('@')));
    }

    private static long offsetOf(String position) {
        return Long.parseLong(position.substring(position.indexOf('@') + 1));
    }

    /** The partition@offset of every update the rows took, in no particular order. */
    private static List<String> appliedPositions(Map<String, String> positionOfValue) {
        return postgres
                .jdbi
                .withHandle(h -> h.createQuery("SELECT last_value FROM account_audit")
                        .mapTo(String.class)
                        .list())
                .stream()
                .map(positionOfValue::get)
                .toList();
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

    private static Process startChild(String topic, String group) throws IOException {
        String java = ProcessHandle.current().info().command().orElse("java");
        Path log = Files.createTempFile("fenced-row-crashing-consumer-", ".log");
        List<String> command = new ArrayList<>(List.of(
                java,
                "-Xmx256m",
                "-XX:TieredStopAtLevel=1",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-cp",
                System.getProperty("java.class.path"),
                FencedRowCrashingConsumer.class.getName(),
                KafkaFixture.kafka().bootstrapServers(),
                postgres.database.jdbcUrl(),
                postgres.database.user(),
                postgres.database.password(),
                topic,
                group));
        return new ProcessBuilder(command)
                .redirectError(log.toFile())
                .directory(new File(System.getProperty("user.dir")))
                .start();
    }
}
