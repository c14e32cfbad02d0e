package dev.fencing.verify.client;

import dev.fencing.FencingException;
import dev.fencing.harness.ChildArguments;
import dev.fencing.harness.ChildCommands;
import dev.fencing.lock.FencedLock;
import dev.fencing.lock.Lease;
import dev.fencing.lock.etcd.EtcdLocks;
import dev.fencing.lock.zookeeper.FencedLocks;
import dev.fencing.testsupport.ZooKeeperSessions;
import io.etcd.jetcd.Client;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.ZooKeeper;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A writer client, one JVM each, started by the coordinator (possibly inside its own network namespace). It
 * loops over operations: lock a random resource ({@code fencing-zookeeper}, or {@code fencing-etcd} with {@code
 * locks=etcd}), write under the token through its
 * resource's {@link WriterWorkload}, release. With {@code resource=postgres} ({@link ChainWrites}) it appends the
 * operation's id to the resource's row (fencing-jdbc on one of four paths, or a plain UPDATE in the control run)
 * and publishes a record keyed by the resource, stamped with the token and carrying the id; with {@code
 * resource=redis} ({@link RedisWrites}) it sets the resource's Redis key (fencing-redis, or plain commands). With
 * {@code resource=election} ({@link ElectionWrites}) it takes no locks: it takes part in its resource's leader
 * election and appends to the row many times per term under the term's token. With {@code resource=rwlock} ({@link
 * RwLockWrites}) it takes the resource's read/write lock: it reads the row under the read lock, or appends to it
 * under the write lock. Every step goes into its history
 * file as it happens (invoke, then ok, fail or info).
 *
 * <p>The writer never checks its lease before writing, on purpose: it plays the holder that keeps going after
 * its session expired (a pause, a partition from ZooKeeper), whose late writes the resource must refuse. (An
 * election's leader checks its term before each write and records the answer, but writes whatever it says.)
 *
 * <p>Protocol with the coordinator ({@link CoordinatorLink}): events {@code READY <granted session ms>}, {@code
 * LOCKED r t}, {@code WRITTEN r t}, {@code REFUSED r t}, {@code UNKNOWN r t}, {@code READ r t} (a read returned), {@code PUBLISHED r t}, {@code
 * EFFECTS r t} (done sending under the token), {@code RELEASED r t}, {@code EXPIRED <session>}, {@code POINT <point> r t <backend pid>}, {@code HEAP <bytes>}, {@code FAILED <message>};
 * commands {@code START}, {@code STOP}, {@code ARM <point>}, {@code DISARM}, {@code GO}, {@code HEAP}, {@code
 * EXPIRE client|server}.
 *
 * <p>ChildArguments are {@code key=value}: client, mode (fenced|control), resource (postgres|redis|election|rwlock), locks
 * (zookeeper|etcd), zookeeper (or, with locks=etcd, etcd: the endpoints, comma-separated), sessionTimeoutMs (with
 * locks=etcd the etcd leases' TTL, whole seconds), lockRoot, resources, seed, history, and the workload's own (postgres: jdbcUrl, jdbcUser,
 * schema, kafka, topic, unstampedEvery, with the JDBC password from {@value #PASSWORD_ENV}; redis: redis,
 * keyPrefix; election: jdbcUrl, jdbcUser, schema, elections; rwlock: jdbcUrl, jdbcUser, schema).
 */
public final class WriterMain {
    public static final String PASSWORD_ENV = "VERIFY_JDBC_PASSWORD";
    private static final Logger LOG = LoggerFactory.getLogger(WriterMain.class);
    private static final Duration LOCK_WAIT = Duration.ofSeconds(2);
    /**
     * Between operations: keeps a long run's lists (and the cost of appending to them) moderate; locks are still
     * contended, since several writers share each resource.
     */
    private static final Duration THINK_TIME = Duration.ofMillis(100);
    /** Operation ids are client * OP_ID_BASE + n: unique per run, and readable (3000017 is client 3's 17th). */
    public static final long OP_ID_BASE = 1_000_000;

    private final ChildArguments args;
    private final int client;
    private final boolean fenced;
    private final CoordinatorLink link = new CoordinatorLink(System.out);
    /** At most this long at a point, so that a lost GO cannot stall a writer holding a lock for good. */
    private static final Duration POINT_WAIT_LIMIT = Duration.ofSeconds(60);

    private final ChildCommands<PausePoint> commands = new ChildCommands<>(PausePoint.class, POINT_WAIT_LIMIT);
    /** The writer's client, for the nemesis's session expiries. */
    private volatile CuratorFramework curator;

    private WriterMain(ChildArguments args) {
        this.args = args;
        this.client = args.whole("client");
        this.fenced = switch (args.text("mode")) {
            case "fenced" -> true;
            case "control" -> false;
            default -> throw new IllegalArgumentException("mode must be fenced or control, got " + args.text("mode"));
        };
    }

    public static void main(String[] argv) {
        WriterMain writer = new WriterMain(new ChildArguments(argv));
        writer.link.listen(writer::command);
        try {
            writer.run();
            writer.link.emitHeap();
            System.exit(0);
        } catch (RuntimeException e) {
            LOG.error("writer {} failed", writer.client, e);
            writer.link.emit("FAILED", e.toString());
            System.exit(1);
        }
    }

    private void command(String line) {
        if (commands.accept(line)) {
            return;
        }
        if (line.equals("HEAP")) {
            link.emitHeap();
        } else if (line.startsWith("EXPIRE ")) {
            expireSession(line.substring("EXPIRE ".length()).trim());
        }
    }

    /**
     * Expires this writer's ZooKeeper session, on the {@code client} side (the handle is told it expired, as
     * Curator's {@code KillSession} does) or on the {@code server} (a second handle on the session, closed), and
     * reports {@code EXPIRED <session>} (or {@code EXPIRED failed}).
     */
    private void expireSession(String side) {
        CuratorFramework framework = curator;
        if (framework == null) {
            link.emit("EXPIRED", "failed");
            return;
        }
        try {
            ZooKeeper handle = framework.getZookeeperClient().getZooKeeper();
            long session = handle.getSessionId();
            if (side.equals("server")) {
                ZooKeeperSessions.expire(args.text("zookeeper"), session, handle.getSessionPasswd());
            } else {
                ZooKeeperSessions.injectExpiry(handle);
            }
            link.emit("EXPIRED", Long.toHexString(session));
        } catch (Exception e) { // Curator's getZooKeeper() declares Exception
            LOG.warn("writer {}: expiring its session on the {} side failed", client, side, e);
            link.emit("EXPIRED", "failed");
        }
    }

    private void run() {
        if (args.text("locks").equals("etcd")) {
            runOnEtcd();
        } else {
            runOnZooKeeper();
        }
    }

    /** The loop with etcd locks, each grant's etcd lease {@code sessionTimeoutMs} long, under the lock root. */
    private void runOnEtcd() {
        Duration ttl = Duration.ofMillis(args.whole("sessionTimeoutMs"));
        Random random = new Random(args.wholeLong("seed") * 1_000_003L + client);
        Client etcd = Client.builder().endpoints(args.text("etcd").split(",")).build();
        try (EtcdLocks locks = EtcdLocks.builder(etcd)
                        .prefix(args.text("lockRoot").substring(1))
                        .leaseTtl(ttl)
                        .build();
                HistoryWriter history = new HistoryWriter(Path.of(args.text("history")), client);
                WriterWorkload<?> workload = workload(history)) {
            workload.connect();
            ready((int) ttl.toMillis());
            loop(
                    (resource, kind) -> {
                        if (kind != WriterWorkload.LockKind.EXCLUSIVE) {
                            throw new IllegalArgumentException(
                                    "etcd has no read/write lock; resource " + args.text("resource") + " needs one");
                        }
                        return locks.lock(resource);
                    },
                    workload,
                    args.whole("resources"),
                    random);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            etcd.close();
        }
    }

    private void runOnZooKeeper() {
        int sessionTimeoutMs = args.whole("sessionTimeoutMs");
        int resources = args.whole("resources");
        Random random = new Random(args.wholeLong("seed") * 1_000_003L + client);

        CuratorFramework curator = CuratorFrameworkFactory.builder()
                .connectString(args.text("zookeeper"))
                .sessionTimeoutMs(sessionTimeoutMs)
                .connectionTimeoutMs(Math.min(sessionTimeoutMs, 1_000))
                .retryPolicy(new ExponentialBackoffRetry(100, 3))
                .build();
        curator.start();
        this.curator = curator;
        try (FencedLocks locks = FencedLocks.builder(curator).build();
                HistoryWriter history = new HistoryWriter(Path.of(args.text("history")), client)) {
            if (!curator.blockUntilConnected(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException(
                        "writer " + client + " could not reach ZooKeeper at " + args.text("zookeeper") + " in 30 s");
            }
            if (args.text("resource").equals("election")) {
                try (ElectionWrites election =
                        new ElectionWrites(args, client, fenced, history, link, commands.gate())) {
                    election.connect();
                    ready(grantedSessionMs(curator));
                    election.run(locks, args.text("lockRoot"), commands::stopping);
                }
                return;
            }
            try (WriterWorkload<?> workload = workload(history)) {
                workload.connect();
                ready(grantedSessionMs(curator));
                String lockRoot = args.text("lockRoot");
                loop(
                        (resource, kind) -> switch (kind) {
                            case EXCLUSIVE -> locks.lock(lockRoot + "/" + resource);
                            case READ ->
                                locks.readWriteLock(lockRoot + "/" + resource).readLock();
                            case WRITE ->
                                locks.readWriteLock(lockRoot + "/" + resource).writeLock();
                        },
                        workload,
                        resources,
                        random);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) { // Curator's getZooKeeper() declares Exception
            throw e instanceof RuntimeException runtime ? runtime : new IllegalStateException(e);
        } finally {
            curator.close();
        }
    }

    private int grantedSessionMs(CuratorFramework curator) throws InterruptedException {
        try {
            return curator.getZookeeperClient().getZooKeeper().getSessionTimeout();
        } catch (InterruptedException e) {
            throw e;
        } catch (Exception e) { // Curator's getZooKeeper() declares Exception
            throw new IllegalStateException("writer " + client + " cannot read its ZooKeeper session", e);
        }
    }

    /** Reports READY with the session timeout (or lease TTL) it was granted and its heap, and waits for START. */
    private void ready(int grantedMs) throws InterruptedException {
        link.emit("READY", grantedMs);
        link.emitHeap();
        commands.awaitStart();
    }

    /** The {@code resource} argument's workload: {@code postgres} (the chain), {@code redis} or {@code rwlock}. */
    private WriterWorkload<?> workload(HistoryWriter history) {
        return switch (args.text("resource")) {
            case "postgres" -> new ChainWrites(args, client, fenced, history, link, commands.gate());
            case "redis" -> new RedisWrites(args, fenced, history, link, commands.gate());
            case "rwlock" -> new RwLockWrites(args, client, fenced, history, link, commands.gate());
            default ->
                throw new IllegalArgumentException(
                        "resource must be postgres, redis, election or rwlock, got " + args.text("resource"));
        };
    }

    /** @param lockOf the lock of a resource, by its name ({@code r1}, {@code r2}, ...) and which of its locks */
    private <P> void loop(
            BiFunction<String, WriterWorkload.LockKind, FencedLock> lockOf,
            WriterWorkload<P> workload,
            int resources,
            Random random)
            throws InterruptedException {
        long sequence = 0;
        while (!commands.stopping()) {
            String resource = "r" + (1 + random.nextInt(resources));
            P plan = workload.plan(random);
            FencedLock lock = lockOf.apply(resource, workload.lockKind(plan));
            Optional<Lease> lease;
            try {
                lease = lock.tryAcquire(LOCK_WAIT);
            } catch (FencingException e) {
                LOG.warn("writer {}: lock {} failed: {}", client, resource, e.toString());
                Thread.sleep(200);
                continue;
            }
            if (lease.isEmpty()) {
                continue;
            }
            long op = client * OP_ID_BASE + ++sequence;
            long token = lease.get().token();
            try {
                workload.operate(lease.get(), resource, op, plan);
            } finally {
                link.emit("EFFECTS", resource, token); // everything it sends under this token is sent
                lease.get().close();
                link.emit("RELEASED", resource, token);
            }
            Thread.sleep(THINK_TIME.toMillis());
        }
    }
}
