package dev.fencing.demo;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.fencing.harness.ChildArguments;
import dev.fencing.harness.ChildCommands;
import dev.fencing.harness.ChildProducer;
import dev.fencing.harness.ParentLink;
import dev.fencing.harness.PostgresAccess;
import dev.fencing.jdbc.WriteOutcome;
import dev.fencing.kafka.FencedRecords;
import dev.fencing.lock.FencedLock;
import dev.fencing.lock.FencedLockListener;
import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.LeaseLostException;
import dev.fencing.lock.zookeeper.FencedLocks;
import java.io.PrintStream;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;
import org.jdbi.v3.core.Jdbi;

/**
 * The entry point of a worker JVM, started by the coordinator ({@link ScenarioRunner}, through the harness's {@code ChildJvm}) with the same class
 * path. It loops: lock a SKU (fencing-zookeeper), read its stock (fenced: after claiming the row with the lock's
 * token, see {@link InventoryDatabase#read}), do a little work, write the decrement and an order row
 * (fencing-jdbc or a plain UPDATE, see {@link InventoryDatabase#write}), publish the reservation to Kafka
 * stamped with the lock's token, release. A refused claim or write is reported as {@code REJECTED}.
 *
 * <p>Protocol: it reports {@link WorkerEvent}s on standard output, one per line, and obeys lines on standard
 * input: {@code START}, {@code STOP} (finish the current operation, then exit), {@code ARM <point>} (at the
 * next {@link WorkerEvent.PausePoint}, report {@code POINT} and wait for {@code GO}: this is where the
 * coordinator sends SIGSTOP) and {@code GO}. Its logs go to standard error.
 *
 * <p>A worker never outlives its coordinator: it exits at once when its standard input ends (the pipe
 * closes when the coordinator dies, however it dies) or when its original parent process is gone.
 *
 * <p>Arguments are {@code key=value} pairs ({@link #ARGUMENTS}); the JDBC password comes from the
 * environment variable {@value InventoryDemo#JDBC_PASSWORD_ENV}.
 */
public final class WorkerMain {
    /** The argument keys, in the order {@link ScenarioRunner} passes them. */
    static final String[] ARGUMENTS = {
        "worker",
        "mode",
        "zookeeper",
        "sessionTimeoutMs",
        "lockRoot",
        "jdbcUrl",
        "jdbcUser",
        "kafka",
        "topic",
        "skus",
        "seed",
        "workMs"
    };

    private static final int EXIT_PARENT_GONE = 3;
    private static final Duration POINT_WAIT_LIMIT = Duration.ofSeconds(30);

    private final ChildArguments args;
    private final int worker;
    private final Mode mode;
    private final PrintStream out;
    private final ChildCommands<WorkerEvent.PausePoint> commands =
            new ChildCommands<>(WorkerEvent.PausePoint.class, POINT_WAIT_LIMIT);

    private WorkerMain(ChildArguments args, PrintStream out) {
        this.args = args;
        this.worker = args.whole("worker");
        this.mode = Mode.fromLabel(args.text("mode"));
        this.out = out;
    }

    public static void main(String[] argv) {
        WorkerMain worker = new WorkerMain(new ChildArguments(argv), System.out);
        worker.watchParent();
        try {
            worker.run();
            System.exit(0);
        } catch (RuntimeException e) {
            worker.emit(WorkerEvent.Kind.FAILED, e.toString(), 0, 0, 0);
            e.printStackTrace();
            System.exit(1);
        }
    }

    private void run() {
        Duration sessionTimeout = Duration.ofMillis(args.wholeLong("sessionTimeoutMs"));
        int skus = args.whole("skus");
        long workMs = args.wholeLong("workMs");
        String lockRoot = args.text("lockRoot");
        String topic = args.text("topic");
        Random random = new Random(args.wholeLong("seed") * 1_000_003L + worker);

        HikariConfig pool = PostgresAccess.childPool(args, InventoryDemo.JDBC_PASSWORD_ENV, 2, "worker-" + worker);
        Map<String, Object> producerConfig = ChildProducer.config(args.text("kafka"), "demo-worker-" + worker);

        CuratorFramework curator = CuratorFrameworkFactory.builder()
                .connectString(args.text("zookeeper"))
                .sessionTimeoutMs((int) sessionTimeout.toMillis())
                .connectionTimeoutMs((int) Math.min(sessionTimeout.toMillis(), 1_000))
                .retryPolicy(new ExponentialBackoffRetry(100, 5))
                .build();
        curator.start();
        try (HikariDataSource dataSource = new HikariDataSource(pool);
                KafkaProducer<String, String> producer =
                        new KafkaProducer<>(producerConfig, new StringSerializer(), new StringSerializer());
                FencedLocks locks = FencedLocks.builder(curator)
                        .listener(new FencedLockListener() {
                            @Override
                            public void leaseInvalidated(Lease lease, LeaseLoss cause) {
                                // Only a mark for the timeline: the worker does not act on it (in the fenced
                                // mode the resource refuses what it sends anyway; in the others, that is the point).
                                String path = lease.path();
                                emit(
                                        WorkerEvent.Kind.LEASE_LOST,
                                        path.substring(path.lastIndexOf('/') + 1),
                                        lease.token(),
                                        0,
                                        0);
                            }
                        })
                        .build()) {
            if (!curator.blockUntilConnected(30, TimeUnit.SECONDS)) {
                throw new DemoException("worker " + worker + " could not reach ZooKeeper at " + args.text("zookeeper")
                        + " within 30 s");
            }
            InventoryDatabase database = new InventoryDatabase(Jdbi.create(dataSource), mode);
            database.openWriter();
            producer.partitionsFor(topic); // connect before START, so the first operation is not slow
            // What the server granted, not what was asked: the server clamps it to [2, 20] x its tickTime.
            int granted = grantedSessionTimeout(curator);
            emit(WorkerEvent.Kind.READY, "", 0, granted, 0);
            commands.awaitStart();
            while (!commands.stopping()) {
                String sku = InventoryDatabase.sku(random.nextInt(skus));
                int quantity = 1 + random.nextInt(3);
                FencedLock lock = locks.lock(lockRoot + "/" + sku);
                Optional<Lease> acquired = lock.tryAcquire(Duration.ofSeconds(2));
                if (acquired.isPresent()) {
                    operate(acquired.get(), sku, quantity, database, producer, topic, workMs);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            curator.close();
        }
    }

    private int grantedSessionTimeout(CuratorFramework curator) {
        try {
            return curator.getZookeeperClient().getZooKeeper().getSessionTimeout();
        } catch (Exception e) { // Curator declares Exception
            throw new DemoException("worker " + worker + " cannot read its ZooKeeper session timeout", e);
        }
    }

    /** One operation under {@code lease}; always releases it. */
    private void operate(
            Lease lease,
            String sku,
            int quantity,
            InventoryDatabase database,
            KafkaProducer<String, String> producer,
            String topic,
            long workMs)
            throws InterruptedException {
        long token = lease.token();
        try {
            InventoryDatabase.StockRead read = database.read(sku, token);
            if (read.claim() instanceof WriteOutcome.Rejected rejected) {
                // Fenced: a newer holder already claimed the row; this lease is stale, write nothing.
                emit(WorkerEvent.Kind.LOCKED, sku, token, -1, 0);
                emit(WorkerEvent.Kind.REJECTED, sku, token, rejected.storedToken(), 1);
                return;
            }
            if (!read.claim().isApplied()) {
                throw new DemoException(
                        "worker " + worker + ": unexpected claim outcome " + read.claim() + " for " + sku);
            }
            int stock = read.stock();
            emit(WorkerEvent.Kind.LOCKED, sku, token, stock, 0);
            if (stock < quantity) {
                emit(WorkerEvent.Kind.SOLD_OUT, sku, token, quantity, 0);
                Thread.sleep(workMs);
                return;
            }
            Thread.sleep(workMs); // "a little work": pricing, fraud check... The lease is not re-checked after it.
            pauseHere(WorkerEvent.PausePoint.READ_WRITE, sku, token);
            if (mode == Mode.LEASE_CHECK) {
                try {
                    lease.ensureValid();
                } catch (LeaseLostException e) {
                    emit(WorkerEvent.Kind.LEASE_CHECK_REFUSED, sku, token, 0, 0);
                    return;
                }
                pauseHere(WorkerEvent.PausePoint.AFTER_LEASE_CHECK, sku, token);
            }
            WriteOutcome outcome = database.write(sku, token, worker, quantity, stock);
            if (outcome instanceof WriteOutcome.Rejected rejected) {
                emit(WorkerEvent.Kind.REJECTED, sku, token, rejected.storedToken(), 0);
                return;
            }
            if (!outcome.isApplied()) {
                throw new DemoException("worker " + worker + ": unexpected outcome " + outcome + " for " + sku);
            }
            emit(WorkerEvent.Kind.WRITTEN, sku, token, quantity, stock - quantity);
            pauseHere(WorkerEvent.PausePoint.WRITE_PUBLISH, sku, token);
            String value = "worker=" + worker + ",quantity=" + quantity + ",stock=" + (stock - quantity);
            RecordMetadata published = producer.send(FencedRecords.create(topic, sku, value, token))
                    .get(30, TimeUnit.SECONDS);
            emit(WorkerEvent.Kind.PUBLISHED, sku, token, published.partition(), published.offset());
        } catch (ExecutionException | TimeoutException e) {
            throw new DemoException("worker " + worker + " could not publish the reservation of " + sku, e);
        } finally {
            lease.close();
            emit(WorkerEvent.Kind.RELEASED, sku, token, 0, 0);
        }
    }

    /** If armed for {@code point}: report it and wait for GO (the coordinator freezes this JVM meanwhile). */
    private void pauseHere(WorkerEvent.PausePoint point, String sku, long token) throws InterruptedException {
        commands.gate().pass(point, () -> emit(WorkerEvent.Kind.POINT, sku, token, point.ordinal(), 0));
        if (Thread.interrupted()) {
            throw new InterruptedException("interrupted at " + point);
        }
    }

    private synchronized void emit(WorkerEvent.Kind kind, String sku, long token, long a, long b) {
        out.println(new WorkerEvent(System.currentTimeMillis(), worker, kind, sku, token, a, b).toLine());
        out.flush();
    }

    /** Reads commands; exits the JVM when standard input ends or the parent process is gone. */
    private void watchParent() {
        ParentLink.listen("worker", commands::accept, EXIT_PARENT_GONE);
    }
}
