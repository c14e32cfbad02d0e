package dev.fencing.verify.client;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.fencing.FencingException;
import dev.fencing.kafka.FencedRecords;
import dev.fencing.lock.FencedLock;
import dev.fencing.lock.FencedLocks;
import dev.fencing.lock.Lease;
import dev.fencing.testsupport.PostgresBackends;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A writer client, one JVM each, started by the coordinator (possibly inside its own network namespace). It
 * loops over operations: lock a random resource ({@code lock-client}), append the operation's id to the
 * resource's row (fenced-jdbc on one of four paths, or a plain UPDATE in the control run), publish a record
 * keyed by the resource, stamped with the token and carrying the id, release. Every step goes into its
 * history file as it happens (invoke, then ok, fail or info).
 *
 * <p>The writer never checks its lease before writing, on purpose: it plays the holder that keeps going after
 * its session expired (a pause, a partition from ZooKeeper), whose late writes the resource must refuse.
 *
 * <p>Protocol with the coordinator ({@link CoordinatorLink}): events {@code READY <granted session ms>}, {@code
 * LOCKED r t}, {@code WRITTEN r t}, {@code REFUSED r t}, {@code UNKNOWN r t}, {@code PUBLISHED r t}, {@code
 * EFFECTS r t} (done sending under the token), {@code RELEASED r t}, {@code POINT <point> r t <backend pid>}, {@code HEAP <bytes>}, {@code FAILED <message>};
 * commands {@code START}, {@code STOP}, {@code ARM <point>}, {@code DISARM}, {@code GO}, {@code HEAP}.
 *
 * <p>Arguments are {@code key=value}: client, mode (fenced|control), zookeeper, sessionTimeoutMs, lockRoot,
 * jdbcUrl, jdbcUser, schema, kafka, topic, resources, seed, history, unstampedEvery; the JDBC password comes
 * from {@value #PASSWORD_ENV}.
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

    private final Arguments args;
    private final int client;
    private final boolean fenced;
    private final CoordinatorLink link = new CoordinatorLink(System.out);
    private final PointGate gate = new PointGate();
    private final CountDownLatch started = new CountDownLatch(1);
    private volatile boolean stopping;

    private WriterMain(Arguments args) {
        this.args = args;
        this.client = args.whole("client");
        this.fenced = switch (args.text("mode")) {
            case "fenced" -> true;
            case "control" -> false;
            default -> throw new IllegalArgumentException("mode must be fenced or control, got " + args.text("mode"));
        };
    }

    public static void main(String[] argv) {
        WriterMain writer = new WriterMain(new Arguments(argv));
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
        if (line.equals("START")) {
            started.countDown();
        } else if (line.equals("STOP")) {
            stopping = true;
            started.countDown();
            gate.disarm();
            gate.go();
        } else if (line.equals("GO")) {
            gate.go();
        } else if (line.startsWith("ARM ")) {
            gate.arm(PausePoint.valueOf(line.substring(4).trim()));
        } else if (line.equals("DISARM")) {
            gate.disarm();
        } else if (line.equals("HEAP")) {
            link.emitHeap();
        }
    }

    private void run() {
        int sessionTimeoutMs = args.whole("sessionTimeoutMs");
        String schema = args.text("schema");
        String topic = args.text("topic");
        int resources = args.whole("resources");
        int unstampedEvery = args.whole("unstampedEvery");
        Random random = new Random(args.wholeLong("seed") * 1_000_003L + client);

        HikariConfig pool = new HikariConfig();
        pool.setJdbcUrl(args.text("jdbcUrl"));
        pool.setUsername(args.text("jdbcUser"));
        String password = System.getenv(PASSWORD_ENV);
        if (password != null && !password.isEmpty()) {
            pool.setPassword(password);
        }
        pool.setMaximumPoolSize(2);
        pool.setConnectionTimeout(10_000);
        pool.setPoolName("writer-" + client);

        Map<String, Object> producerConfig = Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                args.text("kafka"),
                ProducerConfig.ACKS_CONFIG,
                "all",
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG,
                true,
                ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION,
                5,
                ProducerConfig.LINGER_MS_CONFIG,
                0,
                ProducerConfig.CLIENT_ID_CONFIG,
                "verify-writer-" + client);

        CuratorFramework curator = CuratorFrameworkFactory.builder()
                .connectString(args.text("zookeeper"))
                .sessionTimeoutMs(sessionTimeoutMs)
                .connectionTimeoutMs(Math.min(sessionTimeoutMs, 1_000))
                .retryPolicy(new ExponentialBackoffRetry(100, 3))
                .build();
        curator.start();
        try (HikariDataSource dataSource = new HikariDataSource(pool);
                KafkaProducer<String, String> producer =
                        new KafkaProducer<>(producerConfig, new StringSerializer(), new StringSerializer());
                FencedLocks locks = FencedLocks.builder(curator).build();
                HistoryWriter history = new HistoryWriter(Path.of(args.text("history")), client)) {
            if (!curator.blockUntilConnected(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException(
                        "writer " + client + " could not reach ZooKeeper at " + args.text("zookeeper") + " in 30 s");
            }
            Jdbi jdbi = Jdbi.create(dataSource);
            ResourceWriter writer = fenced ? ResourceWriter.fenced(jdbi, schema) : ResourceWriter.plain(jdbi, schema);
            producer.partitionsFor(topic); // connect before START, so the first operation is not slow
            link.emit("READY", curator.getZookeeperClient().getZooKeeper().getSessionTimeout());
            link.emitHeap();
            started.await();
            long sequence = 0;
            while (!stopping) {
                String resource = "r" + (1 + random.nextInt(resources));
                WritePath path = fenced ? WritePath.fenced(random) : WritePath.PLAIN;
                boolean stamped = unstampedEvery <= 0 || random.nextInt(unstampedEvery) != 0;
                FencedLock lock = locks.lock(args.text("lockRoot") + "/" + resource);
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
                operate(lease.get(), resource, op, path, stamped, writer, producer, topic, history);
                Thread.sleep(THINK_TIME.toMillis());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) { // Curator's getZooKeeper() declares Exception
            throw e instanceof RuntimeException runtime ? runtime : new IllegalStateException(e);
        } finally {
            curator.close();
        }
    }

    /** One operation under {@code lease}; always releases it. */
    private void operate(
            Lease lease,
            String resource,
            long op,
            WritePath path,
            boolean stamped,
            ResourceWriter writer,
            KafkaProducer<String, String> producer,
            String topic,
            HistoryWriter history) {
        long token = lease.token();
        try {
            history.invokeAppend(op, resource, token, path.label());
            link.emit("LOCKED", resource, token);
            gate.pass(PausePoint.LOCK_WRITE, () -> link.emit("POINT", PausePoint.LOCK_WRITE, resource, token, 0));
            WriteResult result = writer.append(
                    path,
                    resource,
                    op,
                    token,
                    handle -> gate.pass(
                            PausePoint.IN_TRANSACTION,
                            () -> link.emit(
                                    "POINT",
                                    PausePoint.IN_TRANSACTION,
                                    resource,
                                    token,
                                    PostgresBackends.backendPid(handle.getConnection()))));
            switch (result.kind()) {
                case APPLIED -> {
                    history.okAppend(op, resource, token);
                    link.emit("WRITTEN", resource, token);
                }
                case REFUSED -> {
                    history.failAppend(op, resource, token, result.detail());
                    link.emit("REFUSED", resource, token);
                    return;
                }
                case INDETERMINATE -> {
                    history.infoAppend(op, resource, token, result.detail());
                    link.emit("UNKNOWN", resource, token);
                    return;
                }
            }
            gate.pass(PausePoint.WRITE_PUBLISH, () -> link.emit("POINT", PausePoint.WRITE_PUBLISH, resource, token, 0));
            history.invokePublish(op, resource, token, stamped);
            ProducerRecord<String, String> record = stamped
                    ? FencedRecords.create(topic, resource, Long.toString(op), token)
                    : new ProducerRecord<>(topic, resource, Long.toString(op));
            try {
                RecordMetadata published = producer.send(record).get(30, TimeUnit.SECONDS);
                history.okPublish(op, resource, token, published.partition(), published.offset());
                link.emit("PUBLISHED", resource, token);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                history.infoPublish(op, resource, token, "interrupted");
            } catch (Exception e) { // ExecutionException, TimeoutException, KafkaException
                history.infoPublish(
                        op, resource, token, WriteResult.indeterminate(e).detail());
            }
        } finally {
            link.emit("EFFECTS", resource, token); // everything it sends under this token is sent
            lease.close();
            link.emit("RELEASED", resource, token);
        }
    }
}
