package dev.fencing.kafka;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;

/**
 * Run in a child JVM by {@link CrashRestartIT}: a fenced consumer with the PostgreSQL store whose handler
 * records each applied record in table {@code applied}, and which, once it has handled {@code haltAfter}
 * records and at least 5 of them in the current transaction, reports on stdout and blocks inside the
 * handler until the parent kills the process.
 */
public final class CrashingConsumer {
    static final String HALTED = "HALTED";

    private CrashingConsumer() {}

    /** Args: bootstrap, jdbcUrl, user, password, topic, group, haltAfter. */
    public static void main(String[] args) throws InterruptedException {
        String bootstrap = args[0];
        Jdbi jdbi = Jdbi.create(args[1], args[2], args[3]);
        String topic = args[4];
        String group = args[5];
        int haltAfter = Integer.parseInt(args[6]);
        CountDownLatch never = new CountDownLatch(1);
        int[] handled = {0};
        int[] inTransaction = {0};
        Handle[] transaction = {null};
        FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(Map.of(
                        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                        bootstrap,
                        ConsumerConfig.GROUP_ID_CONFIG,
                        group,
                        ConsumerConfig.AUTO_OFFSET_RESET_CONFIG,
                        "earliest",
                        ConsumerConfig.MAX_POLL_RECORDS_CONFIG,
                        40,
                        ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG,
                        6_000,
                        ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG,
                        1_000))
                .topics(topic)
                // a unit per poll, so that units commit before the one the process dies in (by default a unit
                // spans a second of polls, and the 150 records before the kill would all be in one)
                .commitInterval(Duration.ZERO)
                .transactionalHandler(PostgresWatermarkStore.create(jdbi), (handle, record, token) -> {
                    if (handle != transaction[0]) {
                        transaction[0] = handle;
                        inTransaction[0] = 0;
                    }
                    CrashRestartIT.apply(handle, record, token);
                    handled[0]++;
                    inTransaction[0]++;
                    if (handled[0] >= haltAfter && inTransaction[0] >= 5) {
                        System.out.println(HALTED + " " + handled[0] + " " + inTransaction[0]);
                        System.out.flush();
                        try {
                            never.await();
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                    }
                })
                .build();
        consumer.run();
    }
}
