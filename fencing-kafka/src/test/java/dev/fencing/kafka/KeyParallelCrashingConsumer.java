package dev.fencing.kafka;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jdbi.v3.core.Jdbi;

/**
 * Run in a child JVM by {@link KeyParallelCrashRestartIT}: a key-parallel (or, given concurrency 1, serial) fenced consumer with the PostgreSQL
 * store and a transactional handler that inserts one row per applied record into {@code applied} and waits
 * a random 0 to 4 ms inside its transaction. It runs until the parent kills it (SIGKILL).
 */
public final class KeyParallelCrashingConsumer {
    static final int CONCURRENCY = 8;

    private KeyParallelCrashingConsumer() {}

    /** Args: bootstrap, jdbcUrl, user, password, topic, group, and the concurrency ({@link #CONCURRENCY} if none). */
    public static void main(String[] args) {
        HikariConfig pool = new HikariConfig();
        pool.setJdbcUrl(args[1]);
        pool.setUsername(args[2]);
        pool.setPassword(args[3]);
        pool.setMaximumPoolSize(CONCURRENCY + 2);
        Jdbi jdbi = Jdbi.create(new HikariDataSource(pool));
        FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(Map.of(
                        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                        args[0],
                        ConsumerConfig.GROUP_ID_CONFIG,
                        args[5],
                        ConsumerConfig.MAX_POLL_RECORDS_CONFIG,
                        100,
                        // static membership: a restarted child takes the killed one's place at once, instead
                        // of the group waiting out the dead member's session
                        ConsumerConfig.GROUP_INSTANCE_ID_CONFIG,
                        "crashing-consumer",
                        ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG,
                        6_000,
                        ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG,
                        1_000))
                .maxConcurrency(args.length > 6 ? Integer.parseInt(args[6]) : CONCURRENCY)
                .topics(args[4])
                .transactionalHandler(PostgresWatermarkStore.create(jdbi), (handle, record, token) -> {
                    CrashRestartIT.apply(handle, record, token);
                    KeyParallelIT.sleepMicros(ThreadLocalRandom.current().nextInt(4_000));
                })
                .build();
        System.out.println("STARTED");
        System.out.flush();
        consumer.run();
    }
}
