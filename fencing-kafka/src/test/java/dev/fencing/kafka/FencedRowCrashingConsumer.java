package dev.fencing.kafka;

import dev.fencing.jdbc.FencedTable;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jdbi.v3.core.Jdbi;

/**
 * Run in a child JVM by {@link FencedRowCrashRestartIT}: a fenced consumer whose {@link FencedRowHandler} sets
 * each record's value into its key's row of {@code account}, until the parent kills the process (while one of
 * its units' row updates waits on a lock the parent holds). Units of about one poll (40 records).
 */
public final class FencedRowCrashingConsumer {
    private FencedRowCrashingConsumer() {}

    /** Args: bootstrap, jdbcUrl, user, password, topic, group. */
    public static void main(String[] args) {
        String bootstrap = args[0];
        Jdbi jdbi = Jdbi.create(args[1], args[2], args[3]);
        String topic = args[4];
        String group = args[5];
        FencedTable accounts =
                FencedTable.builder().table("account").keyColumns("id").build(jdbi);
        FencedRowHandler<String, String> rows = FencedRowHandler.<String, String>builder(accounts)
                .columns("last_value")
                .values(record -> new Object[] {record.value()})
                .build();
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
                        256,
                        ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG,
                        6_000,
                        ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG,
                        1_000,
                        // a unit of about one poll: the records are all there at the start, and a unit that
                        // spanned polls for the default second would hold every record up to the held one, so
                        // none would be committed when the parent kills this process; a poll of twice the
                        // test's 128 keys, so that a unit's rounds of row updates are large enough to be written
                        // as batch statements (FencedRowUnits.MIN_STATEMENT_ROWS)
                        FencedConsumerConfig.COMMIT_MAX_RECORDS_CONFIG,
                        256))
                .topics(topic)
                .fencedRowHandler(PostgresWatermarkStore.create(jdbi), rows)
                .build();
        consumer.run();
    }
}
