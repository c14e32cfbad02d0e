package dev.fencing.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.example.jobs.Gate;
import com.example.jobs.Jobs;
import com.example.jobs.JobsApplication;
import dev.fencing.jdbc.WriteOutcome;
import dev.fencing.lock.FencedLeaderElection;
import dev.fencing.lock.FencedLockException;
import dev.fencing.lock.Leadership;
import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.zookeeper.FencedLocks;
import dev.fencing.spring.internal.FencingHealthIndicator;
import dev.fencing.testsupport.PostgresEndpoint;
import dev.fencing.testsupport.PostgresServers;
import dev.fencing.testsupport.ZooKeeperServers;
import dev.fencing.testsupport.ZooKeeperSessions;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ApplicationEvent;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Scheduled jobs and leader election on two instances of a service ({@code com.example.jobs}) against the
 * shared real ZooKeeper and PostgreSQL servers: a {@code @Scheduled @FencedLocked(skipIfLocked = true)}
 * method is skipped while another holder has its lock; a {@code @SchedulerLock} job on the starter's ShedLock
 * provider never runs on both instances at once, and a run that outlived its lock has its fenced write
 * refused while its plain UPDATE lands; the election participant publishes its terms and steps down.
 */
class FencingSchedulingIT {
    private static final String REPORT_LOCK = "/locks/jobs-it/shedlock/report";

    private static PostgresEndpoint db;
    private static CuratorFramework client;
    private static FencedLocks locks;
    private static ConfigurableApplicationContext a;
    private static ConfigurableApplicationContext b;

    @BeforeAll
    static void start() {
        db = PostgresServers.shared().createDatabase("jobs_it");
        client = CuratorFrameworkFactory.newClient(ZooKeeperServers.shared().connectString(), new RetryOneTime(100));
        client.start();
        locks = FencedLocks.builder(client).build();
        a = service("jobs-a", Map.of("fencing.election.path", "/elections/jobs-it"));
        b = service("jobs-b", Map.of("fencing.election.path", "/elections/jobs-it"));
    }

    @AfterAll
    static void stop() {
        for (AutoCloseable c : new AutoCloseable[] {b, a, locks, client, db}) {
            try {
                if (c != null) {
                    c.close();
                }
            } catch (Exception e) {
                e.printStackTrace();
            }
        }
    }

    private static ConfigurableApplicationContext service(String name, Map<String, Object> extra) {
        Map<String, Object> properties = new HashMap<>(Map.of(
                "spring.datasource.url",
                db.jdbcUrl(),
                "spring.datasource.username",
                db.user(),
                "spring.datasource.password",
                db.password() == null ? "" : db.password(),
                "spring.flyway.locations",
                "classpath:db/jobs",
                "fencing.zookeeper.connect-string",
                ZooKeeperServers.shared().connectString(),
                "fencing.shedlock.path-prefix",
                "/locks/jobs-it/shedlock",
                "fencing.kafka.enabled",
                "false",
                "spring.application.name",
                name,
                "spring.autoconfigure.exclude",
                "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration"));
        properties.putAll(extra);
        // not the reservation service's application.properties on this class path: everything is set here
        properties.put("spring.config.name", "jobs");
        return new SpringApplicationBuilder(JobsApplication.class)
                .web(WebApplicationType.NONE)
                .properties(properties)
                .run();
    }

    @Test
    void aScheduledMethodIsSkippedWhileAnotherHolderHasItsLockAndRunsWithAGreaterTokenOnceItIsFree() {
        Jobs atA = a.getBean(Jobs.class);
        Jobs atB = b.getBean(Jobs.class);

        // given another holder of the job's lock (a run in progress finishes before this is granted)
        Lease held = locks.lock("/locks/jobs/cleanup").acquire();
        int runs;
        try {
            runs = atA.cleanupRuns() + atB.cleanupRuns();
            double skipped = skipped(a) + skipped(b);

            // when both instances' schedules fire several times, then
            await().atMost(Duration.ofSeconds(30)).until(() -> skipped(a) + skipped(b) >= skipped + 6);
            assertThat(atA.cleanupRuns() + atB.cleanupRuns())
                    .as("runs while another holder had the lock")
                    .isEqualTo(runs);
            // a method returning Optional waits its timeout, then returns empty
            assertThat(atA.cleanupTokenIfFree()).isEmpty();
            // any other method with a timeout throws, naming the lock; one catch takes it and ZooKeeper's failures
            assertThatThrownBy(atA::cleanupTokenWithinTimeout)
                    .isInstanceOf(LockTimeoutException.class)
                    .isInstanceOf(FencedLockException.class)
                    .hasMessageContaining("/locks/jobs/cleanup")
                    .hasMessageContaining("the method did not run");
        } finally {
            held.close();
        }

        // once it is free, the job runs again, under a greater token than the other holder's
        await().atMost(Duration.ofSeconds(30)).until(() -> atA.cleanupRuns() + atB.cleanupRuns() > runs);
        await().atMost(Duration.ofSeconds(30))
                .until(() -> Stream.concat(atA.cleanupTokens().stream(), atB.cleanupTokens().stream())
                        .anyMatch(t -> t > held.token()));
        assertThat(atA.cleanupTokenIfFree())
                .hasValueSatisfying(t -> assertThat(t).isGreaterThan(held.token()));
        assertThat(atA.cleanupTokenWithinTimeout()).isGreaterThan(held.token());
    }

    private static double skipped(ConfigurableApplicationContext context) {
        return context
                .getBean(MeterRegistry.class)
                .find("fencing.locked.skipped")
                .tag("method", "com.example.jobs.Jobs.cleanup")
                .counters()
                .stream()
                .mapToDouble(c -> c.count())
                .sum();
    }

    @Test
    void aSchedulerLockJobGetsATokenAndNeverRunsOnBothInstancesAtOnce() throws Exception {
        Jobs.MOST_REPORTS_AT_ONCE.set(0);
        Gate gate = new Gate();
        Jobs.reportGate = gate;

        // one instance's run is held in the job, under its lock
        Jobs.Run held = gate.awaitHeld();
        int at = Jobs.REPORT_RUNS.indexOf(held);
        int tried = cversion(REPORT_LOCK);
        // the other instance's schedule fires at least three times meanwhile (each try adds and deletes a node)
        await().atMost(Duration.ofSeconds(30)).until(() -> cversion(REPORT_LOCK) >= tried + 6);
        assertThat(Jobs.REPORT_RUNS).as("runs begun after the held one").hasSize(at + 1);
        assertThat(Jobs.REPORTS_RUNNING.get()).isEqualTo(1);

        gate.open();
        await().atMost(Duration.ofSeconds(30)).until(() -> Jobs.REPORT_RUNS.size() >= at + 6);
        List<Jobs.Run> later = List.copyOf(Jobs.REPORT_RUNS.subList(at, at + 6));
        for (int i = 1; i < later.size(); i++) {
            assertThat(later.get(i).lease.token())
                    .isGreaterThan(later.get(i - 1).lease.token());
        }
        await().atMost(Duration.ofSeconds(30)).until(() -> later.get(4).fenced != null);
        assertThat(later.subList(0, 5))
                .allSatisfy(run -> assertThat(run.fenced).isEqualTo(new WriteOutcome.Applied(run.lease.token())));
        assertThat(Jobs.MOST_REPORTS_AT_ONCE.get()).as("runs at once").isEqualTo(1);

        // the other job, as the documentation shows it, writes under its runs' tokens too
        Jdbi rows = a.getBean(Jdbi.class);
        await().atMost(Duration.ofSeconds(30))
                .until(() ->
                        rows.withHandle(h -> h.createQuery("SELECT last_fence_token FROM report WHERE name = 'tally'")
                                        .mapTo(Long.class)
                                        .one())
                                > 0);
    }

    @Test
    void aSchedulerLockRunThatOutlivedItsLockHasItsFencedWriteRefusedWhileItsPlainUpdateLands() throws Exception {
        Gate gate = new Gate();
        Jobs.reportGate = gate;
        Jobs.Run late = gate.awaitHeld();
        int at = Jobs.REPORT_RUNS.indexOf(late);
        ConfigurableApplicationContext holder = late.instance.equals("jobs-a") ? a : b;
        String other = late.instance.equals("jobs-a") ? "jobs-b" : "jobs-a";

        // the held run's ZooKeeper session expires (as in a long pause); the other instance runs the job
        ZooKeeper session =
                holder.getBean(CuratorFramework.class).getZookeeperClient().getZooKeeper();
        ZooKeeperSessions.expire(
                ZooKeeperServers.shared().connectString(), session.getSessionId(), session.getSessionPasswd());
        await().atMost(Duration.ofSeconds(30)).until(() -> !late.lease.isValid());
        await().atMost(Duration.ofSeconds(30)).until(() -> Jobs.REPORT_RUNS.stream()
                .skip(at + 1)
                .anyMatch(r -> r.instance.equals(other) && r.plainRows == 1));
        Jobs.Run newer = Jobs.REPORT_RUNS.stream()
                .skip(at + 1)
                .filter(r -> r.instance.equals(other) && r.plainRows == 1)
                .findFirst()
                .orElseThrow();
        assertThat(newer.fenced).isEqualTo(new WriteOutcome.Applied(newer.lease.token()));

        // the late run wakes up and writes under its old token
        gate.open();
        await().atMost(Duration.ofSeconds(30)).until(() -> late.plainRows >= 0);
        assertThat(newer.lease.token()).isGreaterThan(late.lease.token());
        assertThat(late.fenced).isInstanceOfSatisfying(WriteOutcome.Rejected.class, rejected -> {
            assertThat(rejected.offeredToken()).isEqualTo(late.lease.token());
            assertThat(rejected.storedToken()).isGreaterThanOrEqualTo(newer.lease.token());
        });
        assertThat(late.plainRows).as("the same write as a plain UPDATE").isEqualTo(1);
    }

    private static int cversion(String path) throws Exception {
        Stat stat = client.checkExists().forPath(path);
        return stat == null ? 0 : stat.getCversion();
    }

    @Test
    void theServicesLockRegistryLocksUnderItsPrefixWithTokens() throws Exception {
        FencedLockRegistry.KeyLock lock = a.getBean(FencedLockRegistry.class).obtain("order-7");
        assertThat(lock.path()).isEqualTo("/locks/orders/order-7");
        assertThat(lock.tryLock(10, TimeUnit.SECONDS)).isTrue();
        try {
            assertThat(lock.token()).isPositive();
        } finally {
            lock.unlock();
        }
    }

    @Test
    void theElectionParticipantsPublishTheirTermsWithTokensAndTheLeaderStepsDownForTheOther() {
        FencedElectionParticipant atA = a.getBean(FencedElectionParticipant.class);
        FencedElectionParticipant atB = b.getBean(FencedElectionParticipant.class);
        await().atMost(Duration.ofSeconds(30)).until(() -> atA.isLeader() || atB.isLeader());
        boolean aLeads = atA.isLeader();
        FencedElectionParticipant leader = aLeads ? atA : atB;
        FencedElectionParticipant follower = aLeads ? atB : atA;
        List<ApplicationEvent> leaderEvents = (aLeads ? a : b).getBean(JobsApplication.Terms.class).events;
        List<ApplicationEvent> followerEvents = (aLeads ? b : a).getBean(JobsApplication.Terms.class).events;
        assertThat(follower.isLeader()).isFalse();
        long term = leader.leadership().orElseThrow().token();
        await().atMost(Duration.ofSeconds(10)).until(() -> !leaderEvents.isEmpty());
        assertThat(leaderEvents.get(leaderEvents.size() - 1))
                .isInstanceOfSatisfying(
                        TermStartedEvent.class, e -> assertThat(e.token()).isEqualTo(term));
        assertThat((aLeads ? a : b)
                        .getBean(FencingHealthIndicator.class)
                        .health()
                        .getDetails()
                        .get("election"))
                .isEqualTo(Map.of(
                        "path",
                        "/elections/jobs-it",
                        "participantId",
                        leader.participantId(),
                        "joined",
                        true,
                        "leader",
                        true,
                        "token",
                        term));

        // when the leader stops (as on shutdown), it steps down and the other instance is elected at once
        leader.stop();
        assertThat(leaderEvents.get(leaderEvents.size() - 1)).isInstanceOfSatisfying(TermEndedEvent.class, e -> {
            assertThat(e.token()).isEqualTo(term);
            assertThat(e.cause()).isEqualTo(LeaseLoss.STEPPED_DOWN);
        });
        await().atMost(Duration.ofSeconds(10)).until(follower::isLeader);
        assertThat(follower.leadership().orElseThrow().token()).isGreaterThan(term);
        await().atMost(Duration.ofSeconds(10)).until(() -> followerEvents.stream()
                .anyMatch(e -> e instanceof TermStartedEvent s && s.token() > term));

        // started again, it joins behind the new leader, and leads once that one steps down
        leader.start();
        assertThat(leader.isRunning()).isTrue();
        assertThat(leader.isLeader()).isFalse();
        long second = follower.leadership().orElseThrow().token();
        follower.stop();
        await().atMost(Duration.ofSeconds(10)).until(leader::isLeader);
        assertThat(leader.leadership().orElseThrow().token()).isGreaterThan(second);
        follower.start();
    }

    @Test
    void closingTheContextStepsDownBeforeTheSessionEndsSoAnotherParticipantLeadsAtOnce() throws Exception {
        ConfigurableApplicationContext c = service(
                "jobs-c",
                Map.of(
                        "fencing.election.path",
                        "/elections/jobs-it-shutdown",
                        "fencing.zookeeper.session-timeout",
                        "60s"));
        List<ApplicationEvent> events = c.getBean(JobsApplication.Terms.class).events;
        FencedElectionParticipant participant = c.getBean(FencedElectionParticipant.class);
        try (FencedLeaderElection watcher = locks.election("/elections/jobs-it-shutdown", "watcher")) {
            await().atMost(Duration.ofSeconds(30)).until(participant::isLeader);
            long term = participant.leadership().orElseThrow().token();
            CompletableFuture<Optional<Leadership>> next =
                    CompletableFuture.supplyAsync(() -> watcher.awaitLeadership(Duration.ofSeconds(40)));

            c.close();

            assertThat(events.get(events.size() - 1)).isInstanceOfSatisfying(TermEndedEvent.class, e -> {
                assertThat(e.token()).isEqualTo(term);
                assertThat(e.cause()).isEqualTo(LeaseLoss.STEPPED_DOWN);
            });
            Optional<Leadership> elected = next.get(45, TimeUnit.SECONDS);
            assertThat(elected).hasValueSatisfying(l -> assertThat(l.token()).isGreaterThan(term));
        } finally {
            c.close();
        }
    }
}
