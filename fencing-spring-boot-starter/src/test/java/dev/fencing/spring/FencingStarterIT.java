package dev.fencing.spring;

import static dev.fencing.spring.Calls.callAt;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.example.reservations.ReservationService;
import com.example.reservations.Reservations;
import dev.fencing.jdbc.WriteOutcome;
import dev.fencing.kafka.FencedRecords;
import dev.fencing.kafka.MissingTopicException;
import dev.fencing.lock.Lease;
import dev.fencing.lock.zookeeper.FencedLocks;
import dev.fencing.lock.zookeeper.ForeignLockParentException;
import dev.fencing.lock.zookeeper.TokenSource;
import dev.fencing.lock.zookeeper.ZooKeeperDigest;
import dev.fencing.spring.autoconfigure.FencingLockedMethodsAutoConfiguration;
import dev.fencing.spring.autoconfigure.FencingZooKeeperAutoConfiguration;
import dev.fencing.spring.internal.DeclaredConsumers;
import dev.fencing.spring.internal.FencedLockedInterceptor;
import dev.fencing.spring.internal.FencedLockedInterceptor.HeldLease;
import dev.fencing.spring.internal.FencingHealthIndicator;
import dev.fencing.testsupport.KafkaEndpoint;
import dev.fencing.testsupport.KafkaServers;
import dev.fencing.testsupport.PostgresEndpoint;
import dev.fencing.testsupport.PostgresServers;
import dev.fencing.testsupport.ZooKeeperEndpoint;
import dev.fencing.testsupport.ZooKeeperServers;
import dev.fencing.testsupport.ZooKeeperSessions;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryOneTime;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.ACL;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.aop.framework.Advised;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The Spring Boot service of docs/spring-boot.md ({@code com.example.reservations}) as real applications against real
 * ZooKeeper, PostgreSQL and Kafka servers: instance A takes a SKU's lock in its {@code @FencedLocked} method
 * and freezes just before its write; its ZooKeeper session expires (as in a long GC pause); instance B takes
 * the lock over and writes; A wakes up and writes under its old token. The fenced write is refused, while
 * the same late write as a plain UPDATE goes through. Also: a {@code @Transactional} method's fenced write
 * rolls back with its transaction (and does not, on a Jdbi that is not joined to Spring's transactions), the
 * consumer declared by properties, meters and health.
 */
class FencingStarterIT {
    private static ZooKeeperEndpoint zk;
    private static PostgresEndpoint db;
    private static KafkaEndpoint kafka;
    private static Jdbi rows;
    private static ConfigurableApplicationContext a;
    private static ConfigurableApplicationContext b;

    @BeforeAll
    static void start() {
        zk = ZooKeeperServers.start();
        db = PostgresServers.start();
        kafka = KafkaServers.start();
        kafka.createTopic("inventory-events", 3);
        kafka.createTopic("inventory-events.dlt", 1);
        a = service("a", Map.of(), FreezeHook.class);
        b = service("b", Map.of("fencing.kafka.enabled", "false"));
        rows = Jdbi.create(db.dataSource());
    }

    @AfterAll
    static void stop() {
        for (AutoCloseable c : new AutoCloseable[] {b, a, kafka, db, zk}) {
            try {
                if (c != null) {
                    c.close();
                }
            } catch (Exception e) {
                e.printStackTrace();
            }
        }
    }

    private static ConfigurableApplicationContext service(String name, Map<String, Object> extra, Class<?>... more) {
        Map<String, Object> properties = new HashMap<>(Map.of(
                "DATABASE_URL",
                db.jdbcUrl(),
                "DATABASE_USER",
                db.user(),
                "DATABASE_PASSWORD",
                db.password() == null ? "" : db.password(),
                "ZOOKEEPER_CONNECT",
                zk.connectString(),
                "KAFKA_BOOTSTRAP",
                kafka.bootstrapServers(),
                "spring.application.name",
                "reservations-" + name,
                // the service has no Redis: Boot's Redis support is on this module's test class path for
                // FencingRedisIT, and would otherwise give it a connection factory to localhost:6379
                "spring.autoconfigure.exclude",
                "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration"));
        properties.putAll(extra);
        return new SpringApplicationBuilder(ReservationService.class)
                .sources(more)
                .web(WebApplicationType.NONE)
                .properties(properties)
                .run();
    }

    @Test
    void aFrozenHoldersLateWriteThroughTheLockedMethodIsRefusedWhileThePlainUpdateGoesThrough() throws Exception {
        rows.useHandle(h -> h.execute("INSERT INTO inventory (sku, stock) VALUES ('A-1', 10), ('B-1', 10)"));
        Reservations atA = a.getBean(Reservations.class);
        Reservations atB = b.getBean(Reservations.class);

        // fenced: A freezes holding the lock, loses it, B reserves 2, A wakes and reserves 3 under its old token
        LateWrite<WriteOutcome> fenced =
                lateWrite("/locks/inventory/A-1", () -> atA.reserve("A-1", 3, 0), () -> atB.reserve("A-1", 2, 0));
        assertThat(fenced.newer).isInstanceOf(WriteOutcome.Applied.class);
        long bToken = fencedToken("A-1");
        assertThat(bToken).isGreaterThan(fenced.frozenToken);
        assertThat(fenced.late).isEqualTo(new WriteOutcome.Rejected(bToken, fenced.frozenToken));
        assertThat(stock("A-1")).isEqualTo(8);

        // the same late write without the fence: a plain UPDATE, under the same lock, lands after B's
        LateWrite<Integer> unfenced = lateWrite(
                "/locks/inventory/B-1", () -> atA.reserveUnfenced("B-1", 3), () -> atB.reserveUnfenced("B-1", 2));
        assertThat(unfenced.newer).isEqualTo(1);
        assertThat(unfenced.late).isEqualTo(1);
        assertThat(stock("B-1")).isEqualTo(5);

        // the loss is counted on A's meter registry, and so is the refused write
        MeterRegistry meters = a.getBean(MeterRegistry.class);
        assertThat(meters.get("fencing.lock.leases.invalidated").counters().stream()
                        .mapToDouble(c -> c.count())
                        .sum())
                .isGreaterThanOrEqualTo(2);
        assertThat(meters.get("fencing.jdbc.writes")
                        .tag("outcome", "rejected")
                        .counter()
                        .count())
                .isEqualTo(1);
    }

    private record LateWrite<T>(long frozenToken, T newer, T late) {}

    /**
     * Runs {@code late} at A until it is frozen just before its statement, with the lease on {@code path};
     * expires A's ZooKeeper session; waits until A's lease is invalid (health shows it, with its token); runs
     * {@code newer} at B; thaws A and returns both results.
     */
    private static <T> LateWrite<T> lateWrite(String path, Callable<T> late, Callable<T> newer) throws Exception {
        Freezer freezer = a.getBean(Freezer.class);
        FencedLockedInterceptor held = a.getBean(FencedLockedInterceptor.class);
        freezer.arm();
        Future<T> lateResult = callAt("a", late);
        freezer.awaitFrozen();
        HeldLease lease = held.heldLeases().stream()
                .filter(l -> l.path().equals(path))
                .findFirst()
                .orElseThrow();
        assertThat(lease.valid()).isTrue();

        ZooKeeper session =
                a.getBean(CuratorFramework.class).getZookeeperClient().getZooKeeper();
        ZooKeeperSessions.expire(zk.connectString(), session.getSessionId(), session.getSessionPasswd());
        await().atMost(Duration.ofSeconds(30)).until(() -> !lease.valid());
        Health health = a.getBean(FencingHealthIndicator.class).health();
        assertThat(health.getDetails().get("leases"))
                .asList()
                .contains(Map.of(
                        "path",
                        path,
                        "token",
                        lease.token(),
                        "valid",
                        false,
                        "method",
                        "com.example.reservations.Reservations."
                                + (path.endsWith("A-1") ? "reserve" : "reserveUnfenced")));

        T newerResult = callAt("b", newer).get(30, TimeUnit.SECONDS);
        freezer.thaw();
        return new LateWrite<>(lease.token(), newerResult, lateResult.get(30, TimeUnit.SECONDS));
    }

    @Test
    void aMethodThatAsksForItIsInterruptedWhenItsLeaseIsLostAndSeesTheLossOnItsLease() throws Exception {
        LockedJob job = a.getBean(LockedJob.class);
        CountDownLatch started = new CountDownLatch(1);
        Future<String> result = callAt(
                "a",
                () -> job.waitForever("nightly", started, null) + "; caller's thread interrupted: "
                        + Thread.currentThread().isInterrupted());
        assertThat(started.await(30, TimeUnit.SECONDS)).isTrue();

        ZooKeeper session =
                a.getBean(CuratorFramework.class).getZookeeperClient().getZooKeeper();
        ZooKeeperSessions.expire(zk.connectString(), session.getSessionId(), session.getSessionPasswd());

        assertThat(result.get(30, TimeUnit.SECONDS))
                .matches("interrupted; lease valid: false, lost: [A-Z_]+; caller's thread interrupted: false");
    }

    /**
     * Both a locked method and the locked method it calls asked to be interrupted when the session is lost:
     * the inner one's return must not clear the interrupt meant for the outer one, whose wait must end too.
     */
    @Test
    void anInnerLockedMethodsReturnKeepsTheInterruptOfTheOuterOne() throws Exception {
        LockedJob.Outer job = a.getBean(LockedJob.Outer.class);
        CountDownLatch started = new CountDownLatch(1);
        Future<String> result = callAt("a", () -> job.waitInsideThenWait("nested", started));
        assertThat(started.await(30, TimeUnit.SECONDS)).isTrue();

        ZooKeeper session =
                a.getBean(CuratorFramework.class).getZookeeperClient().getZooKeeper();
        ZooKeeperSessions.expire(zk.connectString(), session.getSessionId(), session.getSessionPasswd());

        assertThat(result.get(15, TimeUnit.SECONDS)).startsWith("interrupted;").endsWith("outer wait interrupted");
    }

    @Test
    void aPauseToleranceNotBelowTheNegotiatedSessionTimeoutFailsTheStartNamingBothProperties() {
        // the client connects before the locks are built (startup-timeout, 15 s by default), so the session
        // timeout it negotiated is known then
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(FencingZooKeeperAutoConfiguration.class))
                .withPropertyValues(
                        "fencing.zookeeper.connect-string=" + zk.connectString(),
                        "fencing.zookeeper.session-timeout=6s",
                        "fencing.locks.pause-tolerance=10s")
                .run(context -> assertThat(context)
                        .getFailure()
                        .hasStackTraceContaining("fencing.locks.pause-tolerance and fencing.zookeeper.session-timeout:"
                                + " pauseTolerance PT10S must be below the session timeout of"));
    }

    @Test
    void withDigestCredentialsTheLockNodesAdmitOnlyThatUser() throws Exception {
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(FencingZooKeeperAutoConfiguration.class))
                .withPropertyValues(
                        "fencing.zookeeper.connect-string=" + zk.connectString(),
                        "fencing.zookeeper.digest.user=orders",
                        "fencing.zookeeper.digest.password=s3cret")
                .run(context -> {
                    try (Lease lease = context.getBean(FencedLocks.class)
                            .lock("/locks/acl/order-1")
                            .acquire()) {
                        List<ACL> acl =
                                context.getBean(CuratorFramework.class).getACL().forPath("/locks/acl/order-1");
                        assertThat(acl)
                                .containsExactlyElementsOf(
                                        ZooKeeperDigest.of("orders", "s3cret").acl());
                        try (CuratorFramework stranger =
                                CuratorFrameworkFactory.newClient(zk.connectString(), new RetryOneTime(100))) {
                            stranger.start();
                            assertThatThrownBy(() -> stranger.getChildren().forPath("/locks/acl/order-1"))
                                    .isInstanceOf(KeeperException.NoAuthException.class);
                        }
                    }
                });
    }

    @Test
    void aLockedMethodThatNamesNoTokenSourceUsesTheConfiguredOne() {
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(
                        FencingZooKeeperAutoConfiguration.class, FencingLockedMethodsAutoConfiguration.class))
                .withUserConfiguration(ZxidJob.class)
                .withPropertyValues(
                        "fencing.zookeeper.connect-string=" + zk.connectString(), "fencing.locks.token-source=zxid")
                .run(context -> {
                    FencedLocks locks = context.getBean(FencedLocks.class);
                    long token = context.getBean(LockedJob.class).tokenOf("zxid-job", 0);

                    // a ZXID lock on the same path agrees: a SEQUENCE parent would be refused as foreign
                    long next =
                            locks.lock("/locks/jobs/zxid-job", TokenSource.ZXID).runLocked(Lease::token);
                    assertThat(next).isGreaterThan(token);
                    assertThatThrownBy(() -> locks.lock("/locks/jobs/zxid-job", TokenSource.SEQUENCE)
                                    .runLocked(Lease::token))
                            .isInstanceOf(ForeignLockParentException.class);
                });
    }

    @Test
    void aTransactionalMethodsFencedWriteRollsBackWithTheRestOfItsTransaction() {
        rows.useHandle(h -> h.execute("INSERT INTO inventory (sku, stock) VALUES ('C-1', 10)"));
        Reservations reservations = a.getBean(Reservations.class);
        // the lock's advisor comes first, so the lock is taken before the transaction begins and held until it ends
        List<String> advice = Arrays.stream(((Advised) reservations).getAdvisors())
                .map(advisor -> advisor.getAdvice().getClass().getSimpleName())
                .toList();
        assertThat(advice).containsExactly("FencedLockedInterceptor", "TransactionInterceptor");

        reservations.order("order-1", "C-1", 1, 0);
        long committed = fencedToken("C-1");
        // the fenced write applies under a newer token, then the order's INSERT fails: both roll back
        assertThatThrownBy(() -> reservations.order("order-1", "C-1", 1, 0)).hasMessageContaining("orders_pkey");

        assertThat(stock("C-1")).isEqualTo(9);
        assertThat(fencedToken("C-1")).isEqualTo(committed);
        assertThat(orders("C-1")).isEqualTo(1);
    }

    @Test
    void onAJdbiOutsideSpringTransactionsTheFencedWriteCommitsAloneAndOutlivesTheRollback() {
        rows.useHandle(h -> h.execute("INSERT INTO inventory (sku, stock) VALUES ('D-1', 10)"));
        try (ConfigurableApplicationContext plain =
                service("plain", Map.of("fencing.kafka.enabled", "false"), PlainJdbi.class)) {
            Reservations reservations = plain.getBean(Reservations.class);

            reservations.order("order-2", "D-1", 1, 0);
            assertThatThrownBy(() -> reservations.order("order-2", "D-1", 1, 0)).hasMessageContaining("orders_pkey");

            assertThat(stock("D-1"))
                    .as("the second reservation committed without its order")
                    .isEqualTo(8);
            assertThat(orders("D-1")).isEqualTo(1);
        }
    }

    /**
     * Consumers declared on topics that do not exist fail the application's start, naming every missing topic
     * of every consumer at once: started on their own threads, they would fail there after the application had
     * reported itself up, one topic at a time.
     */
    @Test
    void consumersDeclaredOnMissingTopicsFailTheStartNamingEveryTopic() {
        assertThatThrownBy(() -> service(
                        "missing-topic",
                        Map.of(
                                "fencing.kafka.consumers.orphan.topics", "no-such-topic",
                                "fencing.kafka.consumers.orphan.handler", "reservationLog",
                                "fencing.kafka.consumers.stray.topics", "inventory-events,no-other-topic",
                                "fencing.kafka.consumers.stray.handler", "reservationLog")))
                .hasRootCauseInstanceOf(MissingTopicException.class)
                .satisfies(failure -> assertThat(failure.getCause().getMessage())
                        .contains("fencing.kafka.consumers.orphan:\n\t\tno-such-topic (it is subscribed")
                        .contains("--create --topic no-such-topic.dlt")
                        .contains("fencing.kafka.consumers.stray:\n\t\tno-other-topic (it is subscribed")
                        .contains("fencing.kafka.consumers.stray.properties.fencing.dead.letter.topic")
                        .contains("--create --topic no-other-topic.dlt")
                        .doesNotContain("--create --topic inventory-events"));
    }

    @Test
    void theConsumerDeclaredByPropertiesAppliesFreshRecordsDeadLettersStaleOnesAndStopsWithTheContext()
            throws Exception {
        DeclaredConsumers consumers = a.getBean(DeclaredConsumers.class);
        await().atMost(Duration.ofSeconds(30))
                .until(() -> consumers.states().equals(Map.of("reservation-log", "running")));
        try (Producer<String, String> producer = new KafkaProducer<>(
                Map.of("bootstrap.servers", kafka.bootstrapServers(), "enable.idempotence", true, "acks", "all"),
                new StringSerializer(),
                new StringSerializer())) {
            producer.send(FencedRecords.create("inventory-events", "E-1", "reserved 1", 7))
                    .get();
            producer.send(FencedRecords.create("inventory-events", "E-1", "reserved 5 (late)", 6))
                    .get();
            producer.send(FencedRecords.create("inventory-events", "E-1", "reserved 2", 8))
                    .get();
        }
        await().atMost(Duration.ofSeconds(60)).until(() -> logged("E-1").size() == 2);
        assertThat(logged("E-1")).containsExactly("7 reserved 1", "8 reserved 2");
        MeterRegistry meters = a.getBean(MeterRegistry.class);
        await().atMost(Duration.ofSeconds(30))
                .until(() -> meters.find("fencing.kafka.records.dead.lettered").counters().stream()
                                .mapToDouble(c -> c.count())
                                .sum()
                        == 1);
        assertThat(a.getBean(FencingHealthIndicator.class).health().getStatus()).isEqualTo(Status.UP);

        a.stop();
        assertThat(consumers.states()).isEqualTo(Map.of("reservation-log", "stopped"));
        a.start();
        // "starting" until the consumer's own thread runs its loop
        assertThat(consumers.states().get("reservation-log")).isIn("starting", "running");
        await().atMost(Duration.ofSeconds(30))
                .until(() -> consumers.states().equals(Map.of("reservation-log", "running")));
    }

    private static int stock(String sku) {
        return rows.withHandle(h -> h.createQuery("SELECT stock FROM inventory WHERE sku = ?")
                .bind(0, sku)
                .mapTo(Integer.class)
                .one());
    }

    private static long fencedToken(String sku) {
        return rows.withHandle(h -> h.createQuery("SELECT last_fence_token FROM inventory WHERE sku = ?")
                .bind(0, sku)
                .mapTo(Long.class)
                .one());
    }

    private static int orders(String sku) {
        return rows.withHandle(h -> h.createQuery("SELECT count(*) FROM orders WHERE sku = ?")
                .bind(0, sku)
                .mapTo(Integer.class)
                .one());
    }

    private static List<String> logged(String sku) {
        return rows.withHandle(
                h -> h.createQuery("SELECT token || ' ' || event FROM reservation_log WHERE sku = ? ORDER BY id")
                        .bind(0, sku)
                        .mapTo(String.class)
                        .list());
    }

    @Configuration(proxyBeanMethods = false)
    static class ZxidJob {
        @Bean
        LockedJob job() {
            return new LockedJob();
        }
    }

    /** A service's own Jdbi, made the usual way: its handles do not join Spring-managed transactions. */
    @Configuration(proxyBeanMethods = false)
    static class PlainJdbi {
        @Bean
        Jdbi jdbi(DataSource dataSource) {
            return Jdbi.create(dataSource);
        }
    }
}
