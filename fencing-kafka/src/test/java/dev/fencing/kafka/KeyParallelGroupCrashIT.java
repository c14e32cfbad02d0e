package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.header;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.readAll;
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
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The key-parallel consumer with commit groups, its JVM killed (SIGKILL) while one group is held open after its
 * handler ran several records (the other workers going on meanwhile, their groups committing and the partitions'
 * offsets being saved), then restarted: the open group left neither an effect nor an applied offset for any of
 * its records, and after the restart every record is applied exactly once, no stale one.
 */
class KeyParallelGroupCrashIT {
    private static final int KEYS = 60;
    private static final int RECORDS = 2_000;
    private static PostgresFixture postgres;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_group_crash_it");
        postgres.jdbi.useHandle(h -> h.execute("CREATE TABLE applied (kafka_partition INT, kafka_offset BIGINT,"
                + " record_key TEXT, token BIGINT, value TEXT)"));
    }

    @AfterAll
    static void drop() {
        postgres.close();
    }

    @Test
    void aGroupKilledOpenLeavesNeitherEffectNorAppliedOffsetAndTheRestartAppliesEveryRecordOnce() throws Exception {
        // given: each key gets three records per token, and every 11th record from the second round on is a late
        // one under an older token
        String topic = newTopic("group-crash", 2);
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (int i = 0; i < RECORDS; i++) {
                int round = i / (KEYS * 3);
                long token = round > 0 && i % 11 == 5 ? round : round + 2;
                producer.send(FencedRecords.create(topic, "key-" + (i % KEYS), "r" + i, token));
            }
            producer.flush();
        }
        KafkaFixture.Expected expected = KafkaFixture.expected(readAll(topic, RECORDS));
        String group = newGroup("group-crash");

        // when: a group is held open after several of its records ran; the others go on until the partitions'
        // stored offsets moved twice more; then SIGKILL
        ConcurrentLinkedQueue<String> lines = new ConcurrentLinkedQueue<>();
        Process child = startChild(topic, group, true, lines);
        String blockedTx;
        try {
            await().atMost(Duration.ofSeconds(120))
                    .until(() -> lines.stream().anyMatch(l -> l.startsWith("BLOCKED ")) || !child.isAlive());
            assertThat(child.isAlive()).isTrue();
            blockedTx = lines.stream()
                    .filter(l -> l.startsWith("BLOCKED "))
                    .findFirst()
                    .orElseThrow()
                    .substring("BLOCKED ".length());
            long applied = appliedRows();
            await().atMost(Duration.ofSeconds(120)).until(() -> appliedRows() >= applied + 200 || !child.isAlive());
            assertThat(child.isAlive()).isTrue();
            // and the stored offsets move as far as they can: a group takes whole keys from any partition its
            // worker runs, so once a partition's offset reaches a record of the open group it stays there, and
            // when the group holds records of both partitions neither moves again (how far the offsets were from
            // the group when it blocked is a matter of timing: waiting for moves that cannot come failed this test
            // on a loaded machine)
            boolean moved = movedWithin(group, child, Duration.ofSeconds(20))
                    && movedWithin(group, child, Duration.ofSeconds(20));
            System.out.println("stored offsets moved twice while the group was open: " + moved
                    + "; the open group ran records of partitions "
                    + lines.stream()
                            .filter(l -> l.startsWith("HANDLED " + blockedTx + " "))
                            .map(l -> l.split(" ")[2])
                            .distinct()
                            .sorted()
                            .toList()
                    + "; stored offsets by partition "
                    + postgres.jdbi.withHandle(h -> h.createQuery("SELECT kafka_partition || '@' || next_offset"
                                    + " FROM fencing.kafka_offset WHERE consumer_group = :g ORDER BY 1")
                            .bind("g", group)
                            .mapTo(String.class)
                            .list()));
            assertThat(child.isAlive()).isTrue();
        } finally {
            child.destroyForcibly(); // SIGKILL
            assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
        }

        // then: the open group's records, several, left no effect and no applied offset
        List<String[]> inGroup = new ArrayList<>();
        for (String line : lines) {
            String[] f = line.split(" ");
            if (f[0].equals("HANDLED") && f[1].equals(blockedTx)) {
                inGroup.add(new String[] {f[2], f[3]});
            }
        }
        assertThat(inGroup).as("records the open group ran").hasSizeGreaterThanOrEqualTo(4);
        for (String[] record : inGroup) {
            int partition = Integer.parseInt(record[0]);
            long offset = Long.parseLong(record[1]);
            assertThat(postgres.jdbi.<Long, RuntimeException>withHandle(h -> h.createQuery(
                                    "SELECT count(*) FROM applied WHERE kafka_partition = :p AND kafka_offset = :o")
                            .bind("p", partition)
                            .bind("o", offset)
                            .mapTo(Long.class)
                            .one()))
                    .as("effect of %d@%d", partition, offset)
                    .isZero();
            String key = "key-" + (offset(partition, offset, topic) % KEYS);
            assertThat(postgres.jdbi.<Long, RuntimeException>withHandle(
                            h -> h.createQuery("SELECT coalesce(max(applied_offset), -1) FROM"
                                            + " fencing.kafka_watermark WHERE consumer_group = :g AND kafka_partition = :p"
                                            + " AND record_key = :k")
                                    .bind("g", group)
                                    .bind("p", partition)
                                    .bind("k", key.getBytes(StandardCharsets.UTF_8))
                                    .mapTo(Long.class)
                                    .one()))
                    .as("applied offset of %s, which %d@%d would have raised", key, partition, offset)
                    .isLessThan(offset);
        }

        // and: restarted, it applies every record exactly once, exactly the fresh ones; every stale one dead-lettered
        Process last = startChild(topic, group, false, new ConcurrentLinkedQueue<>());
        try {
            await().atMost(Duration.ofSeconds(120)).until(() -> storedOffsetSum(group) == RECORDS);
        } finally {
            last.destroyForcibly();
            last.waitFor(30, TimeUnit.SECONDS);
        }
        List<String> applied = postgres.jdbi.withHandle(
                h -> h.createQuery("SELECT kafka_partition || '@' || kafka_offset FROM applied")
                        .mapTo(String.class)
                        .list());
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
    }

    /** The index of the record at {@code partition@offset} in the order it was produced (its value "rN"). */
    private static int offset(int partition, long offset, String topic) {
        return readAll(topic, RECORDS).stream()
                .filter(r -> r.partition() == partition && r.offset() == offset)
                .mapToInt(r -> Integer.parseInt(r.value().substring(1)))
                .findFirst()
                .orElseThrow();
    }

    /** Whether the group's stored offsets moved within {@code wait} (or the child died). */
    private static boolean movedWithin(String group, Process child, Duration wait) {
        long before = storedOffsetSum(group);
        try {
            await().atMost(wait)
                    .pollInterval(Duration.ofMillis(20))
                    .until(() -> storedOffsetSum(group) > before || !child.isAlive());
        } catch (ConditionTimeoutException e) {
            return false; // pinned: see the caller
        }
        return storedOffsetSum(group) > before;
    }

    private static long appliedRows() {
        return postgres.jdbi.withHandle(h ->
                h.createQuery("SELECT count(*) FROM applied").mapTo(Long.class).one());
    }

    private static long storedOffsetSum(String group) {
        return postgres.jdbi.withHandle(h -> h.createQuery(
                        "SELECT coalesce(sum(next_offset), 0) FROM fencing.kafka_offset WHERE consumer_group = :g")
                .bind("g", group)
                .mapTo(Long.class)
                .one());
    }

    private static Process startChild(String topic, String group, boolean block, ConcurrentLinkedQueue<String> lines)
            throws IOException {
        String java = ProcessHandle.current().info().command().orElse("java");
        Path log = Files.createTempFile("group-crashing-consumer-", ".log");
        List<String> command = new ArrayList<>(List.of(
                java,
                "-Xmx256m",
                "-XX:TieredStopAtLevel=1",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-cp",
                System.getProperty("java.class.path"),
                GroupCrashingConsumer.class.getName(),
                KafkaFixture.kafka().bootstrapServers(),
                postgres.database.jdbcUrl(),
                postgres.database.user(),
                postgres.database.password(),
                topic,
                group,
                String.valueOf(block)));
        Process process = new ProcessBuilder(command)
                .redirectError(log.toFile())
                .directory(new File(System.getProperty("user.dir")))
                .start();
        CompletableFuture.runAsync(() -> {
            try (BufferedReader reader =
                    new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line = reader.readLine(); line != null; line = reader.readLine()) {
                    lines.add(line);
                }
            } catch (IOException e) {
                // the child was killed
            }
        });
        return process;
    }
}
