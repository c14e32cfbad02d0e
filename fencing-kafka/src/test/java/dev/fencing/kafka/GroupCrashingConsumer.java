package dev.fencing.kafka;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.PrintStream;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jdbi.v3.core.Jdbi;

/**
 * Run in a child JVM by {@link KeyParallelGroupCrashIT}: a key-parallel fenced consumer with the PostgreSQL store,
 * a transactional handler that inserts one row per applied record into {@code applied} and waits a random 0 to
 * 2 ms in its transaction, and commit groups of up to 16 records. It prints {@code HANDLED txid partition offset}
 * for each handler call. With {@code block}, once 300 records were handled, the first handler call that is at
 * least the fourth of its transaction prints {@code BLOCKED txid} and never returns, holding its group open
 * while the other workers go on; the parent then kills the JVM (SIGKILL).
 */
public final class GroupCrashingConsumer {
    static final int CONCURRENCY = 8;

    private GroupCrashingConsumer() {}

    /** Args: bootstrap, jdbcUrl, user, password, topic, group, block (true or false). */
    public static void main(String[] args) throws Exception {
        HikariConfig pool = new HikariConfig();
        pool.setJdbcUrl(args[1]);
        pool.setUsername(args[2]);
        pool.setPassword(args[3]);
        pool.setMaximumPoolSize(CONCURRENCY + 2);
        Jdbi jdbi = Jdbi.create(new HikariDataSource(pool));
        boolean block = Boolean.parseBoolean(args[6]);
        PrintStream out = System.out;
        AtomicInteger handled = new AtomicInteger();
        AtomicBoolean blocked = new AtomicBoolean();
        Map<Long, AtomicInteger> callsPerTx = new ConcurrentHashMap<>();
        CountDownLatch never = new CountDownLatch(1);
        FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(Map.of(
                        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                        args[0],
                        ConsumerConfig.GROUP_ID_CONFIG,
                        args[5],
                        ConsumerConfig.MAX_POLL_RECORDS_CONFIG,
                        100,
                        ConsumerConfig.GROUP_INSTANCE_ID_CONFIG,
                        "group-crashing-consumer",
                        ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG,
                        6_000,
                        ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG,
                        1_000))
                .maxConcurrency(CONCURRENCY)
                .groupMaxRecords(16)
                .groupMaxTime(Duration.ofSeconds(10))
                .topics(args[4])
                .transactionalHandler(PostgresWatermarkStore.create(jdbi), (handle, record, token) -> {
                    CrashRestartIT.apply(handle, record, token);
                    long txid = handle.createQuery("SELECT txid_current()")
                            .mapTo(Long.class)
                            .one();
                    int inTx = callsPerTx
                            .computeIfAbsent(txid, t -> new AtomicInteger())
                            .incrementAndGet();
                    synchronized (out) {
                        out.println("HANDLED " + txid + " " + record.partition() + " " + record.offset());
                        out.flush();
                    }
                    if (block && handled.incrementAndGet() >= 300 && inTx >= 4 && blocked.compareAndSet(false, true)) {
                        synchronized (out) {
                            out.println("BLOCKED " + txid);
                            out.flush();
                        }
                        try {
                            never.await();
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                        throw new IllegalStateException("interrupted while holding the group open");
                    }
                    KeyParallelIT.sleepMicros(ThreadLocalRandom.current().nextInt(2_000));
                })
                .build();
        consumer.run();
    }
}
