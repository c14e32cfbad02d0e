package dev.fencing.demo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.harness.ZooKeeperAccess;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryOneTime;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
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
            List.of(Mode.UNFENCED, Mode.LEASE_CHECK, Mode.FENCED),
            null,
            null,
            2, // the lease-check run's assertions need both of its first two pauses, one before and one after the check
            false);

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
    void fencingKeepsEveryInvariantUnderTheSamePausesThatBreakTheUnfencedAndLeaseCheckRuns() {
        ScenarioRunner runner = new ScenarioRunner(SHORT, clusters, logs, System.out);

        // when
        RunResult unfenced = runner.run(Mode.UNFENCED);
        RunResult leaseCheck = runner.run(Mode.LEASE_CHECK);
        RunResult fenced = runner.run(Mode.FENCED);
        System.out.print(Reports.table(List.of(unfenced, leaseCheck, fenced)));

        // then: every run froze a lock holder before its write, and someone else took the SKU over
        assertThat(tookOver(unfenced, WorkerEvent.PausePoint.READ_WRITE)).isPositive();
        assertThat(tookOver(leaseCheck, WorkerEvent.PausePoint.AFTER_LEASE_CHECK))
                .isPositive();
        assertThat(tookOver(fenced, WorkerEvent.PausePoint.READ_WRITE)).isPositive();
        assertThat(InventoryVerdict.of(List.of(unfenced, leaseCheck, fenced), 2).failures())
                .isEmpty();

        // unfenced: the paused holder's late read-modify-write was accepted and erased the new holder's decrement
        assertThat(unfenced.report().anomalyDetected()).isTrue();
        assertThat(unfenced.report().invariantsHold()).isFalse();
        assertThat(unfenced.report().staleWritesAccepted())
                .isGreaterThanOrEqualTo(tookOver(unfenced, WorkerEvent.PausePoint.READ_WRITE));
        assertThat(unfenced.report().lostUpdates()).isPositive();
        assertThat(unfenced.staleWritesRejected()).isZero();
        // the plain consumer applies every record that reached Kafka after a newer one of its SKU
        assertThat(unfenced.report().staleRecordsApplied())
                .isEqualTo(InvariantChecker.publishedAfterANewerToken(unfenced.events()));

        // lease-check narrows the window: a worker frozen before the check finds its lease lost and writes nothing
        List<RunRecorder.Pause> beforeTheCheck = leaseCheck.pauses().stream()
                .filter(p -> p.point() == WorkerEvent.PausePoint.READ_WRITE)
                .toList();
        // (the first two pauses already show both sides, and every run goes on until two have landed)
        assertThat(leaseCheck.pauses())
                .extracting(RunRecorder.Pause::point)
                .startsWith(WorkerEvent.PausePoint.AFTER_LEASE_CHECK, WorkerEvent.PausePoint.READ_WRITE);
        assertThat(leaseCheck.leaseCheckRefusals())
                .as(() -> "lease checks that refused to write; the run's pauses " + leaseCheck.pauses() + " and events "
                        + leaseCheck.events())
                .isPositive();
        assertThat(beforeTheCheck).allSatisfy(p -> assertThat(leaseCheck.events())
                .as("worker %d, frozen before its lease check under token %d", p.worker(), p.token())
                .anyMatch(e -> e.kind() == WorkerEvent.Kind.LEASE_CHECK_REFUSED
                        && e.worker() == p.worker()
                        && e.token() == p.token())
                .noneMatch(e ->
                        e.kind() == WorkerEvent.Kind.WRITTEN && e.worker() == p.worker() && e.token() == p.token()));
        // and does not close it: the check cannot see a pause that falls right after it; those stale writes get
        // through
        assertThat(leaseCheck.report().staleWritesAccepted())
                .isGreaterThanOrEqualTo(tookOver(leaseCheck, WorkerEvent.PausePoint.AFTER_LEASE_CHECK));
        assertThat(leaseCheck.report().invariantsHold()).isFalse();

        // fenced: PostgreSQL refused every such late write, the consumer every late record
        assertThat(fenced.report().violations()).isEmpty();
        assertThat(fenced.report().invariantsHold()).isTrue();
        assertThat(fenced.report().oversoldUnits()).isZero();
        assertThat(fenced.report().lostUpdates()).isZero();
        assertThat(fenced.report().staleWritesAccepted()).isZero();
        assertThat(fenced.report().staleRecordsApplied()).isZero();
        assertThat(fenced.report().ordersAccepted()).isPositive();
        assertThat(fenced.staleWritesRejected())
                .isGreaterThanOrEqualTo(tookOver(fenced, WorkerEvent.PausePoint.READ_WRITE));
        // a holder frozen between write and publish publishes late; its record is stale only if the new
        // holder's record reached Kafka first (the new holder may itself be frozen before publishing)
        assertThat(fenced.staleRecordsDropped()).isEqualTo(InvariantChecker.publishedAfterANewerToken(fenced.events()));
        assertThat(fenced.events()).noneMatch(e -> e.kind() == WorkerEvent.Kind.FAILED);
    }

    @Test
    void aRunInWhichNoPauseLandedExitsOneInsteadOfPassingVacuously() throws Exception {
        Set<String> topicsBefore = topics();
        List<String> lockRunsBefore = lockRuns();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();

        // when: the fenced run alone, with its first pause due only after the run has ended
        int code = InventoryDemo.execute(
                new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8),
                "--zookeeper",
                clusters.zookeeperConnect(),
                "--jdbc-url",
                clusters.jdbcUrl(),
                "--jdbc-user",
                clusters.jdbcUser(),
                "--kafka",
                clusters.kafkaBootstrap(),
                "--mode",
                "fenced",
                "--workers",
                "2",
                "--skus",
                "1",
                "--duration",
                "3s",
                "--pause-every",
                "1h",
                "--html",
                logs.resolve("vacuous.html").toString());

        // then: every invariant held, and still the demo fails, saying why
        String output = out.toString(StandardCharsets.UTF_8);
        assertThat(output)
                .as("errors: %s", err.toString(StandardCharsets.UTF_8))
                .containsPattern("invariants hold\\s+yes");
        assertThat(code).isEqualTo(InventoryDemo.EXIT_FAILURE);
        assertThat(output.strip().lines().reduce((a, b) -> b).orElseThrow())
                .startsWith("The fenced run proves nothing: 0 of its 0 pauses landed");
        // and, the servers being external to that run, it removed the topics and lock nodes it created, the
        // locks' history nodes included
        assertThat(topics()).isEqualTo(topicsBefore);
        assertThat(lockRuns()).isEqualTo(lockRunsBefore);
    }

    private static Set<String> topics() throws Exception {
        try (Admin admin =
                Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, clusters.kafkaBootstrap()))) {
            return admin.listTopics().names().get(30, TimeUnit.SECONDS);
        }
    }

    /** The runs' lock roots under /fencing-demo, and fencing-zookeeper's history of them under /fencing-lock-history. */
    private static List<String> lockRuns() throws Exception {
        try (CuratorFramework client =
                CuratorFrameworkFactory.newClient(clusters.zookeeperConnect(), new RetryOneTime(100))) {
            client.start();
            client.blockUntilConnected(30, TimeUnit.SECONDS);
            List<String> runs = new ArrayList<>();
            for (String root : List.of("/fencing-demo", ZooKeeperAccess.LOCK_HISTORY_ROOT + "/fencing-demo")) {
                if (client.checkExists().forPath(root) != null) {
                    client.getChildren().forPath(root).stream().sorted().forEach(run -> runs.add(root + "/" + run));
                }
            }
            return runs;
        }
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

    private static long tookOver(RunResult run, WorkerEvent.PausePoint point) {
        return run.pauses().stream()
                .filter(p -> p.point() == point && p.nextToken() > 0)
                .count();
    }
}
