package dev.fencing.demo;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A short scenario on embedded servers and real worker JVMs frozen with SIGSTOP: the unfenced run must show
 * the damage, the fenced run must keep every invariant, and the fence must be what made the difference.
 */
class InventoryDemoIT {
    /** One SKU and three workers: whoever waits for the lock takes over as soon as a frozen holder's session ends. */
    private static final DemoSettings SHORT = new DemoSettings(
            null,
            null,
            null,
            null,
            null,
            3,
            1,
            5_000,
            Duration.ofSeconds(10),
            Duration.ofMillis(2_500),
            Duration.ofSeconds(1),
            Duration.ofMillis(1_500),
            Duration.ofMillis(20),
            7,
            List.of(Mode.UNFENCED, Mode.FENCED),
            null,
            null);

    private static Clusters clusters;
    private static Path logs;

    @BeforeAll
    static void startServers() throws IOException {
        logs = Files.createTempDirectory("demo-inventory-it-");
        clusters = Clusters.open(SHORT, System.out);
    }

    @AfterAll
    static void stopServers() {
        if (clusters != null) {
            clusters.close();
        }
    }

    @Test
    void fencingKeepsEveryInvariantUnderTheSamePausesThatBreakTheUnfencedRun() {
        ScenarioRunner runner = new ScenarioRunner(SHORT, clusters, logs, System.out);

        // when
        RunResult unfenced = runner.run(Mode.UNFENCED);
        RunResult fenced = runner.run(Mode.FENCED);
        System.out.print(Reports.table(List.of(unfenced, fenced)));

        // then: every run froze a lock holder between its read and its write, and someone else took the SKU over
        assertThat(tookOver(unfenced, WorkerEvent.PausePoint.READ_WRITE)).isPositive();
        assertThat(tookOver(fenced, WorkerEvent.PausePoint.READ_WRITE)).isPositive();

        // unfenced: the paused holder's late read-modify-write erased the new holder's decrement
        assertThat(unfenced.report().anomalyDetected()).isTrue();
        assertThat(unfenced.report().invariantsHold()).isFalse();
        assertThat(unfenced.report().lostUpdates()).isPositive();
        assertThat(unfenced.staleWritesRejected()).isZero();

        // fenced: PostgreSQL refused every such late write, the consumer every late record
        assertThat(fenced.report().violations()).isEmpty();
        assertThat(fenced.report().invariantsHold()).isTrue();
        assertThat(fenced.report().oversoldUnits()).isZero();
        assertThat(fenced.report().lostUpdates()).isZero();
        assertThat(fenced.report().ordersAccepted()).isPositive();
        assertThat(fenced.staleWritesRejected())
                .isGreaterThanOrEqualTo(tookOver(fenced, WorkerEvent.PausePoint.READ_WRITE));
        // a holder frozen between write and publish publishes late; its record is stale only if the new
        // holder's record reached Kafka first (the new holder may itself be frozen before publishing)
        assertThat(fenced.staleRecordsDropped()).isEqualTo(publishedAfterANewerToken(fenced));
        assertThat(fenced.events()).noneMatch(e -> e.kind() == WorkerEvent.Kind.FAILED);
    }

    @Test
    void reportsAnUnreachableDatabaseByItsUrlAndExitsNonZero() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();

        int code = InventoryDemo.execute(
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8),
                "--zookeeper",
                clusters.zookeeperConnect(),
                "--jdbc-url",
                "jdbc:postgresql://127.0.0.1:1/shop");

        assertThat(code).isEqualTo(InventoryDemo.EXIT_FAILURE);
        assertThat(err.toString(StandardCharsets.UTF_8))
                .contains("cannot connect to PostgreSQL at jdbc:postgresql://127.0.0.1:1/shop (--jdbc-url)");
    }

    @Test
    void reportsAnUnreachableKafkaByItsAddressAndExitsNonZero() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();

        int code = InventoryDemo.execute(
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8),
                "--zookeeper",
                clusters.zookeeperConnect(),
                "--jdbc-url",
                clusters.jdbcUrl(),
                "--jdbc-user",
                clusters.jdbcUser(),
                "--kafka",
                "127.0.0.1:1");

        assertThat(code).isEqualTo(InventoryDemo.EXIT_FAILURE);
        assertThat(err.toString(StandardCharsets.UTF_8)).contains("cannot reach Kafka at 127.0.0.1:1 (--kafka)");
    }

    /**
     * PUBLISHED events whose token is below that of an earlier record of the same SKU in Kafka (one SKU, one
     * partition; events carry the record's offset): exactly the records the fenced consumer must drop.
     */
    private static long publishedAfterANewerToken(RunResult run) {
        Map<String, Long> highest = new HashMap<>();
        return run.events().stream()
                .filter(e -> e.kind() == WorkerEvent.Kind.PUBLISHED)
                .sorted(Comparator.comparing(WorkerEvent::sku).thenComparingLong(WorkerEvent::b))
                .filter(e -> {
                    long newest = highest.getOrDefault(e.sku(), 0L);
                    highest.merge(e.sku(), e.token(), Math::max);
                    return e.token() < newest;
                })
                .count();
    }

    private static long tookOver(RunResult run, WorkerEvent.PausePoint point) {
        return run.pauses().stream()
                .filter(p -> p.point() == point && p.nextToken() > 0)
                .count();
    }
}
