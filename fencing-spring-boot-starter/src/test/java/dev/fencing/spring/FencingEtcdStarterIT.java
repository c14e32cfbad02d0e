package dev.fencing.spring;

import static dev.fencing.spring.Calls.callAt;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.example.reservations.ReservationService;
import com.example.reservations.Reservations;
import dev.fencing.jdbc.WriteOutcome;
import dev.fencing.lock.etcd.EtcdLocks;
import dev.fencing.spring.internal.FencedLockedInterceptor;
import dev.fencing.spring.internal.FencedLockedInterceptor.HeldLease;
import dev.fencing.spring.internal.FencingHealthIndicator;
import dev.fencing.testsupport.EtcdEndpoint;
import dev.fencing.testsupport.EtcdServers;
import dev.fencing.testsupport.PostgresEndpoint;
import dev.fencing.testsupport.PostgresServers;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.LeaseOption;
import io.micrometer.core.instrument.MeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The Spring Boot service of docs/spring-boot.md ({@code com.example.reservations}) with its locks on a real etcd
 * ({@code fencing.lock-service=etcd}, {@code fencing.etcd.endpoints}) and a real PostgreSQL: two instances exclude
 * each other in their {@code @FencedLocked} methods, which get the grant's token (the holder's key's create
 * revision); a holder frozen just before its write whose etcd lease is revoked meanwhile has its late write refused
 * while the same write as a plain UPDATE lands; a method that asked for it is interrupted when its key is deleted.
 */
class FencingEtcdStarterIT {
    /** Keys of this run's locks, apart from anything else on a shared etcd. */
    private static final String PREFIX = "starter-it/" + UUID.randomUUID();

    private static EtcdEndpoint etcd;
    private static PostgresEndpoint db;
    private static Client etcdClient;
    private static Jdbi rows;
    private static ConfigurableApplicationContext a;
    private static ConfigurableApplicationContext b;

    @BeforeAll
    static void start() {
        etcd = EtcdServers.shared();
        db = PostgresServers.start();
        etcdClient = Client.builder()
                .endpoints(etcd.endpoints().toArray(String[]::new))
                .build();
        a = service("a", FreezeHook.class);
        b = service("b", LockedJob.class);
        rows = Jdbi.create(db.dataSource());
    }

    @AfterAll
    static void stop() {
        for (AutoCloseable c : new AutoCloseable[] {b, a, etcdClient, db}) {
            try {
                if (c != null) {
                    c.close();
                }
            } catch (Exception e) {
                e.printStackTrace();
            }
        }
    }

    /** An instance of the service on etcd: its application.properties name ZooKeeper too, and etcd is chosen. */
    private static ConfigurableApplicationContext service(String name, Class<?>... more) {
        return service(name, Map.of(), more);
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
                "zookeeper-not-used:2181",
                "KAFKA_BOOTSTRAP",
                "kafka-not-used:9092",
                "fencing.kafka.enabled",
                "false",
                "spring.application.name",
                "reservations-" + name,
                "spring.autoconfigure.exclude",
                "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration"));
        properties.put("fencing.lock-service", "etcd");
        properties.put("fencing.etcd.endpoints", String.join(",", etcd.endpoints()));
        properties.put("fencing.etcd.prefix", PREFIX);
        properties.putAll(extra);
        return new SpringApplicationBuilder(ReservationService.class)
                .sources(more)
                .web(WebApplicationType.NONE)
                .properties(properties)
                .run();
    }

    @Test
    void twoInstancesExcludeEachOtherAndTheNextHolderGetsAGreaterToken() throws Exception {
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        Future<Long> first = callAt("a", () -> a.getBean(LockedJob.class).holdUntil("exclusive", entered, release, 0));
        assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();

        // a holds the lock: b waits for it, and gives up when its timeout passes
        LockedJob atB = b.getBean(LockedJob.class);
        assertThatThrownBy(() -> atB.tokenWithinHalfASecond("exclusive", 0)).isInstanceOf(LockTimeoutException.class);

        // a's one key is under the lock path's etcd name, and its token is that key's create revision
        HeldLease held = heldAt(a, "/locks/jobs/exclusive");
        List<KeyValue> keys = keysUnder(PREFIX + "/locks%2Fjobs%2Fexclusive/");
        assertThat(keys).hasSize(1);
        assertThat(held.token()).isEqualTo(keys.get(0).getCreateRevision());

        release.countDown();
        long firstToken = first.get(30, TimeUnit.SECONDS);
        assertThat(firstToken).isEqualTo(held.token());
        assertThat(atB.tokenOf("exclusive", 0)).isGreaterThan(firstToken);
    }

    @Test
    void theHealthIndicatorIsUpOnEtcdAndListsTheLeaseALockedMethodHolds() throws Exception {
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        Future<Long> held = callAt("a", () -> a.getBean(LockedJob.class).holdUntil("healthy", entered, release, 0));
        assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();

        Health health = a.getBean(FencingHealthIndicator.class).health();

        assertThat(health.getStatus()).isEqualTo(Status.UP);
        assertThat(health.getDetails())
                .containsEntry("etcd", "connected")
                .containsEntry("etcdEndpoints", etcd.endpoints());
        HeldLease lease = heldAt(a, "/locks/jobs/healthy");
        assertThat(health.getDetails().get("leases"))
                .asList()
                .contains(Map.of(
                        "path",
                        PREFIX + "/locks%2Fjobs%2Fhealthy", // the lease's path: the etcd lock's
                        "token",
                        lease.token(),
                        "valid",
                        true,
                        "method",
                        LockedJob.class.getName() + ".holdUntil"));
        release.countDown();
        assertThat(held.get(30, TimeUnit.SECONDS)).isEqualTo(lease.token());
    }

    @Test
    void aFrozenHoldersLateWriteIsRefusedAfterItsEtcdLeaseWasRevokedWhileThePlainUpdateGoesThrough() throws Exception {
        rows.useHandle(h -> h.execute("INSERT INTO inventory (sku, stock) VALUES ('E-1', 10), ('E-2', 10)"));
        Reservations atA = a.getBean(Reservations.class);
        Reservations atB = b.getBean(Reservations.class);

        LateWrite<WriteOutcome> fenced =
                lateWrite("/locks/inventory/E-1", () -> atA.reserve("E-1", 3, 0), () -> atB.reserve("E-1", 2, 0));
        assertThat(fenced.newer).isInstanceOf(WriteOutcome.Applied.class);
        long bToken = fencedToken("E-1");
        assertThat(bToken).isGreaterThan(fenced.frozenToken);
        assertThat(fenced.late).isEqualTo(new WriteOutcome.Rejected(bToken, fenced.frozenToken));
        assertThat(stock("E-1")).isEqualTo(8);

        // the same late write without the fence: a plain UPDATE, under the same lock, lands after B's
        LateWrite<Integer> unfenced = lateWrite(
                "/locks/inventory/E-2", () -> atA.reserveUnfenced("E-2", 3), () -> atB.reserveUnfenced("E-2", 2));
        assertThat(unfenced.newer).isEqualTo(1);
        assertThat(unfenced.late).isEqualTo(1);
        assertThat(stock("E-2")).isEqualTo(5);

        // the starter's EtcdLocks told its listener: the losses are counted on A's meter registry
        assertThat(a.getBean(MeterRegistry.class).get("fencing.lock.leases.invalidated").counters().stream()
                        .mapToDouble(c -> c.count())
                        .sum())
                .isGreaterThanOrEqualTo(2);
    }

    @Test
    void aMethodThatAsksForItIsInterruptedWhenItsKeyIsDeletedAndSeesTheLossOnItsLease() throws Exception {
        LockedJob job = a.getBean(LockedJob.class);
        CountDownLatch started = new CountDownLatch(1);
        Future<String> result = callAt(
                "a",
                () -> job.waitForever("nightly", started, null) + "; caller's thread interrupted: "
                        + Thread.currentThread().isInterrupted());
        assertThat(started.await(30, TimeUnit.SECONDS)).isTrue();

        etcdClient
                .getKVClient()
                .delete(
                        bytes(PREFIX + "/locks%2Fjobs%2Fnightly/"),
                        DeleteOption.builder().isPrefix(true).build())
                .get(10, TimeUnit.SECONDS);

        assertThat(result.get(30, TimeUnit.SECONDS))
                .isEqualTo("interrupted; lease valid: false, lost: NODE_GONE; caller's thread interrupted: false");
    }

    @Test
    void theStarterClosesTheClientItMadeWithTheContextAfterItsLocks() throws Exception {
        ConfigurableApplicationContext c = service("c", LockedJob.class);
        Client client = c.getBean(Client.class);
        EtcdLocks locks = c.getBean(EtcdLocks.class);
        assertThat(c.getBean(LockedJob.class).tokenOf("closing", 0)).isPositive();
        c.close();

        assertThatThrownBy(() -> locks.lock("after-close")).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> client.getKVClient().get(bytes(PREFIX)).get(10, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class);
    }

    @Test
    void theApplicationsOwnClientAndAnEtcdLocksCustomizerAreUsed() throws Exception {
        OwnClient.endpoints = etcd.endpoints().toArray(String[]::new);
        try (ConfigurableApplicationContext d = service("d", LockedJob.class, OwnClient.class)) {
            assertThat(d.getBeansOfType(Client.class)).containsOnlyKeys("etcdClient");
            CountDownLatch entered = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            Future<Long> held =
                    callAt("d", () -> d.getBean(LockedJob.class).holdUntil("customized", entered, release, 0));
            assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();
            KeyValue key;
            long grantedTtl;
            try {
                List<KeyValue> keys = keysUnder(PREFIX + "/locks%2Fjobs%2Fcustomized/");
                assertThat(keys).hasSize(1);
                key = keys.get(0);
                grantedTtl = etcdClient
                        .getLeaseClient()
                        .timeToLive(key.getLease(), LeaseOption.DEFAULT)
                        .get(10, TimeUnit.SECONDS)
                        .getGrantedTTL();
            } finally {
                release.countDown();
            }
            assertThat(grantedTtl).isEqualTo(5);
            assertThat(held.get(30, TimeUnit.SECONDS)).isEqualTo(key.getCreateRevision());
        }
    }

    /** The application's own jetcd client (docs/spring-boot.md), and a customizer of the starter's EtcdLocks. */
    @Configuration(proxyBeanMethods = false)
    static class OwnClient {
        static String[] endpoints;

        @Bean
        Client etcdClient() {
            return Client.builder().endpoints(endpoints).build(); // TLS, auth, ...: as the cluster needs
        }

        @Bean
        EtcdLocksCustomizer shortLeases() {
            return builder -> builder.leaseTtl(Duration.ofSeconds(5));
        }
    }

    @Test
    void theShedLockProviderSkipsARunWhileTheOtherInstanceHoldsTheJobAndTheNextRunHasAGreaterToken() throws Exception {
        LockConfiguration job =
                new LockConfiguration(Instant.now(), "etcd-tally", Duration.ofMinutes(1), Duration.ZERO);
        FencedLockProvider atA = a.getBean(FencedLockProvider.class);
        FencedLockProvider atB = b.getBean(FencedLockProvider.class);

        SimpleLock held = atA.lock(job).orElseThrow();
        long first;
        try {
            first = CurrentLease.token();
            assertThat(callAt("b", () -> atB.lock(job)).get(30, TimeUnit.SECONDS))
                    .isEmpty();
        } finally {
            held.unlock();
        }
        long next = callAt("b", () -> {
                    SimpleLock run = atB.lock(job).orElseThrow();
                    try {
                        return CurrentLease.token();
                    } finally {
                        run.unlock();
                    }
                })
                .get(30, TimeUnit.SECONDS);
        assertThat(next).isGreaterThan(first);
    }

    @Test
    void theElectionParticipantLeadsOnEtcdAndTheOtherInstanceTakesOverWithAGreaterTokenWhenItStops() throws Exception {
        Map<String, Object> election = Map.of("fencing.election.path", "/elections/etcd-ledger");
        ConfigurableApplicationContext e = service("e", election);
        ConfigurableApplicationContext f = service("f", election);
        try {
            FencedElectionParticipant atE = e.getBean(FencedElectionParticipant.class);
            FencedElectionParticipant atF = f.getBean(FencedElectionParticipant.class);
            await().atMost(Duration.ofSeconds(30)).until(() -> atE.isLeader() || atF.isLeader());
            ConfigurableApplicationContext leaderContext = atE.isLeader() ? e : f;
            FencedElectionParticipant leader = atE.isLeader() ? atE : atF;
            FencedElectionParticipant follower = atE.isLeader() ? atF : atE;
            long term = leader.leadership().orElseThrow().token();
            assertThat(follower.isLeader()).isFalse();

            leaderContext.close(); // steps down: the follower is elected at once, not after a lease TTL
            await().atMost(Duration.ofSeconds(30)).until(follower::isLeader);
            assertThat(follower.leadership().orElseThrow().token()).isGreaterThan(term);
        } finally {
            f.close();
            e.close();
        }
    }

    private record LateWrite<T>(long frozenToken, T newer, T late) {}

    /**
     * Runs {@code late} at A until it is frozen just before its statement, with the lease on {@code path}; revokes
     * the etcd lease of A's key from another client (as an operator, or etcd expiring it while A stood still, would);
     * waits until A's lease is invalid; runs {@code newer} at B; thaws A and returns both results.
     */
    private static <T> LateWrite<T> lateWrite(String path, Callable<T> late, Callable<T> newer) throws Exception {
        Freezer freezer = a.getBean(Freezer.class);
        freezer.arm();
        Future<T> lateResult = callAt("a", late);
        freezer.awaitFrozen();
        HeldLease lease = heldAt(a, path);
        assertThat(lease.valid()).isTrue();

        List<KeyValue> keys = keysUnder(PREFIX + "/" + path.substring(1).replace("/", "%2F") + "/");
        assertThat(keys).hasSize(1);
        etcdClient.getLeaseClient().revoke(keys.get(0).getLease()).get(10, TimeUnit.SECONDS);
        await().atMost(Duration.ofSeconds(30)).until(() -> !lease.valid());

        T newerResult = callAt("b", newer).get(30, TimeUnit.SECONDS);
        freezer.thaw();
        return new LateWrite<>(lease.token(), newerResult, lateResult.get(30, TimeUnit.SECONDS));
    }

    private static HeldLease heldAt(ConfigurableApplicationContext instance, String path) {
        return instance.getBean(FencedLockedInterceptor.class).heldLeases().stream()
                .filter(l -> l.path().equals(PREFIX + "/" + path.substring(1).replace("/", "%2F")))
                .findFirst()
                .orElseThrow();
    }

    private static List<KeyValue> keysUnder(String prefix) throws Exception {
        return etcdClient
                .getKVClient()
                .get(bytes(prefix), GetOption.builder().isPrefix(true).build())
                .get(10, TimeUnit.SECONDS)
                .getKvs();
    }

    private static ByteSequence bytes(String text) {
        return ByteSequence.from(text, StandardCharsets.UTF_8);
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
}
