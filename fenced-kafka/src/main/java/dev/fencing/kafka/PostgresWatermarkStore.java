package dev.fencing.kafka;

import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.JdbiException;
import org.jdbi.v3.core.transaction.TransactionIsolationLevel;

/**
 * A {@link WatermarkStore} in PostgreSQL: the tables {@code fencing.kafka_watermark} and {@code
 * fencing.kafka_offset} that the {@code db} module's migration {@code V100__kafka_consumer_state.sql}
 * creates (add {@code classpath:dev/fencing/db/migration} to Flyway's locations).
 *
 * <p>Each batch is one transaction: a {@link TransactionalRecordHandler} gets the transaction's {@code
 * Handle}, and its writes, the raised watermarks and the next offsets commit together. A crash at any point
 * leaves either all of a batch or none of it, so after a restart no record's effect is applied twice and
 * the watermarks that refused records before the crash refuse them after it.
 *
 * <pre>{@code
 * Jdbi jdbi = Jdbi.create(dataSource);
 * FencedConsumer<String, String> consumer = FencedConsumer.builder(new StringDeserializer(), new StringDeserializer())
 *         .properties(config)
 *         .topics("inventory")
 *         .transactionalHandler(PostgresWatermarkStore.create(jdbi), (handle, record, token) ->
 *                 handle.execute("UPDATE stock SET qty = qty - 1 WHERE sku = ?", record.key()))
 *         .build();
 * }</pre>
 *
 * <p>Each unit of work first {@link #claim claims} its partitions: a transaction-scoped advisory lock per
 * group and partition, then a check that the stored offset is still the one the consumer loaded. A member
 * that lost its partition (a zombie) therefore waits for the new owner's unit or fails with {@link
 * StalePartitionStateException} before its handler runs; offsets are also saved with a compare-and-set on
 * that offset. Watermarks are read lazily ({@link #loadOffset} at assignment, {@link #loadWatermarks} per
 * poll for unknown keys), so assigning a partition with a million keys costs one query. Watermarks only
 * go up ({@code GREATEST}). Thread-safe (each call takes its own connection from Jdbi).
 */
public final class PostgresWatermarkStore implements WatermarkStore<Handle> {
    private static final String LOAD_OFFSET = "SELECT next_offset FROM fencing.kafka_offset"
            + " WHERE consumer_group = ? AND topic = ? AND kafka_partition = ?";
    private static final String LOAD_WATERMARKS = "SELECT record_key, fence_token FROM fencing.kafka_watermark"
            + " WHERE consumer_group = ? AND topic = ? AND kafka_partition = ?";
    private static final String LOAD_SOME_WATERMARKS = "SELECT record_key, fence_token FROM fencing.kafka_watermark"
            + " WHERE consumer_group = ? AND topic = ? AND kafka_partition = ? AND record_key = ANY(?)";
    private static final String INSERT_OFFSET = "INSERT INTO fencing.kafka_offset"
            + " (consumer_group, topic, kafka_partition, next_offset) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING";
    private static final String UPDATE_OFFSET = "UPDATE fencing.kafka_offset SET next_offset = ?, updated_at = now()"
            + " WHERE consumer_group = ? AND topic = ? AND kafka_partition = ? AND next_offset = ?";
    /**
     * Raises the keys the table holds with a plain UPDATE and inserts only the others: an INSERT ... ON
     * CONFLICT DO UPDATE of a key that exists costs about twice an UPDATE of it, and after the first units
     * nearly every key exists. ON CONFLICT stays for a key another transaction inserts meanwhile.
     */
    private static final String UPSERT_WATERMARKS = "WITH input AS (SELECT k, t FROM unnest(?::bytea[], ?::bigint[])"
            + " AS u(k, t)),"
            + " raised AS (UPDATE fencing.kafka_watermark AS w"
            + " SET fence_token = GREATEST(w.fence_token, input.t), updated_at = now() FROM input"
            + " WHERE w.consumer_group = ? AND w.topic = ? AND w.kafka_partition = ? AND w.record_key = input.k"
            + " RETURNING w.record_key)"
            + " INSERT INTO fencing.kafka_watermark (consumer_group, topic, kafka_partition, record_key, fence_token)"
            + " SELECT ?, ?, ?, k, t FROM input WHERE NOT EXISTS (SELECT 1 FROM raised WHERE raised.record_key = k)"
            + " ON CONFLICT (consumer_group, topic, kafka_partition, record_key) DO UPDATE"
            + " SET fence_token = GREATEST(fencing.kafka_watermark.fence_token, EXCLUDED.fence_token),"
            + " updated_at = now()";

    /**
     * A transaction-scoped advisory lock per group and partition: it needs no row (a partition's first unit
     * has none yet) and no column beyond the V100 schema. Two partitions whose names hash alike share a lock,
     * which only serializes them.
     */
    private static final String LOCK_PARTITION = "SELECT pg_advisory_xact_lock(hashtextextended(?, 0))";

    private final Jdbi jdbi;

    private PostgresWatermarkStore(Jdbi jdbi) {
        this.jdbi = jdbi;
    }

    /** A store on the database behind {@code jdbi}, which must have the V100 migration applied. */
    public static PostgresWatermarkStore create(Jdbi jdbi) {
        return new PostgresWatermarkStore(Objects.requireNonNull(jdbi, "jdbi"));
    }

    @Override
    public PartitionState load(String groupId, TopicPartition partition) {
        try {
            return jdbi.withHandle(handle -> {
                Connection connection = handle.getConnection();
                long nextOffset = -1;
                try (PreparedStatement statement = connection.prepareStatement(LOAD_OFFSET)) {
                    bindPartition(statement, 1, groupId, partition);
                    try (ResultSet rows = statement.executeQuery()) {
                        if (rows.next()) {
                            nextOffset = rows.getLong(1);
                        }
                    }
                }
                Map<Bytes, Long> watermarks = new HashMap<>();
                try (PreparedStatement statement = connection.prepareStatement(LOAD_WATERMARKS)) {
                    statement.setFetchSize(10_000);
                    bindPartition(statement, 1, groupId, partition);
                    try (ResultSet rows = statement.executeQuery()) {
                        while (rows.next()) {
                            watermarks.put(Bytes.wrap(rows.getBytes(1)), rows.getLong(2));
                        }
                    }
                }
                return new PartitionState(nextOffset, watermarks);
            });
        } catch (JdbiException | SQLException e) {
            throw new WatermarkStoreException(
                    "could not load watermarks of group " + groupId + " " + partition + ": " + e.getMessage(), e);
        }
    }

    @Override
    public long loadOffset(String groupId, TopicPartition partition) {
        try {
            return jdbi.withHandle(handle -> storedOffset(handle.getConnection(), groupId, partition));
        } catch (JdbiException | SQLException e) {
            throw new WatermarkStoreException(
                    "could not load the offset of group " + groupId + " " + partition + ": " + e.getMessage(), e);
        }
    }

    @Override
    public Map<Bytes, Long> loadWatermarks(String groupId, TopicPartition partition, Collection<Bytes> keys) {
        if (keys.isEmpty()) {
            return Map.of();
        }
        try {
            return jdbi.withHandle(handle -> {
                Connection connection = handle.getConnection();
                byte[][] wanted = new byte[keys.size()][];
                int i = 0;
                for (Bytes key : keys) {
                    wanted[i++] = key.get();
                }
                Array keyArray = connection.createArrayOf("bytea", wanted);
                Map<Bytes, Long> found = new HashMap<>();
                try (PreparedStatement statement = connection.prepareStatement(LOAD_SOME_WATERMARKS)) {
                    bindPartition(statement, 1, groupId, partition);
                    statement.setArray(4, keyArray);
                    try (ResultSet rows = statement.executeQuery()) {
                        while (rows.next()) {
                            found.put(Bytes.wrap(rows.getBytes(1)), rows.getLong(2));
                        }
                    }
                } finally {
                    keyArray.free();
                }
                return found;
            });
        } catch (JdbiException | SQLException e) {
            throw new WatermarkStoreException(
                    "could not load " + keys.size() + " watermarks of group " + groupId + " " + partition + ": "
                            + e.getMessage(),
                    e);
        }
    }

    @Override
    public void commit(String groupId, Function<? super Handle, List<PartitionProgress>> work) {
        Objects.requireNonNull(groupId, "groupId");
        try {
            jdbi.useTransaction(TransactionIsolationLevel.READ_COMMITTED, handle -> {
                List<PartitionProgress> progress = work.apply(handle);
                save(handle.getConnection(), groupId, progress);
            });
        } catch (JdbiException | SQLException e) {
            throw new WatermarkStoreException(
                    "could not commit a batch of group " + groupId + ": " + e.getMessage(), e);
        }
    }

    /**
     * Locks the partition for the rest of the transaction and checks its stored offset. The stored offset is
     * the partition's epoch: every commit moves it, so a unit that loaded an older one belongs to a member that
     * lost the partition; and a unit that holds the lock makes every other claimant wait until it commits or
     * rolls back, then fail this check. Either way no two units handle the same records.
     */
    @Override
    public void claim(Handle handle, String groupId, TopicPartition partition, long expectedOffset) {
        try {
            Connection connection = handle.getConnection();
            try (PreparedStatement statement = connection.prepareStatement(LOCK_PARTITION)) {
                statement.setString(1, groupId + "/" + partition.topic() + "/" + partition.partition());
                statement.execute();
            }
            long stored = storedOffset(connection, groupId, partition);
            if (stored != expectedOffset) {
                throw new StalePartitionStateException(groupId, partition, expectedOffset, stored);
            }
        } catch (SQLException e) {
            throw new WatermarkStoreException(
                    "could not claim " + partition + " for group " + groupId + ": " + e.getMessage(), e);
        }
    }

    private static void save(Connection connection, String groupId, List<PartitionProgress> progress)
            throws SQLException {
        for (PartitionProgress p : progress) {
            int updated;
            if (p.expectedOffset() < 0) {
                try (PreparedStatement statement = connection.prepareStatement(INSERT_OFFSET)) {
                    bindPartition(statement, 1, groupId, p.partition());
                    statement.setLong(4, p.nextOffset());
                    updated = statement.executeUpdate();
                }
            } else {
                try (PreparedStatement statement = connection.prepareStatement(UPDATE_OFFSET)) {
                    statement.setLong(1, p.nextOffset());
                    bindPartition(statement, 2, groupId, p.partition());
                    statement.setLong(5, p.expectedOffset());
                    updated = statement.executeUpdate();
                }
            }
            if (updated != 1) {
                throw new StalePartitionStateException(
                        groupId, p.partition(), p.expectedOffset(), storedOffset(connection, groupId, p.partition()));
            }
            if (p.raisedWatermarks().isEmpty()) {
                continue;
            }
            byte[][] keys = new byte[p.raisedWatermarks().size()][];
            Long[] tokens = new Long[keys.length];
            int i = 0;
            for (Map.Entry<Bytes, Long> entry : p.raisedWatermarks().entrySet()) {
                keys[i] = entry.getKey().get();
                tokens[i] = entry.getValue();
                i++;
            }
            Array keyArray = connection.createArrayOf("bytea", keys);
            Array tokenArray = connection.createArrayOf("bigint", tokens);
            try (PreparedStatement statement = connection.prepareStatement(UPSERT_WATERMARKS)) {
                statement.setArray(1, keyArray);
                statement.setArray(2, tokenArray);
                bindPartition(statement, 3, groupId, p.partition());
                bindPartition(statement, 6, groupId, p.partition());
                statement.executeUpdate();
            } finally {
                keyArray.free();
                tokenArray.free();
            }
        }
    }

    private static long storedOffset(Connection connection, String groupId, TopicPartition partition)
            throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(LOAD_OFFSET)) {
            bindPartition(statement, 1, groupId, partition);
            try (ResultSet rows = statement.executeQuery()) {
                return rows.next() ? rows.getLong(1) : -1;
            }
        }
    }

    private static void bindPartition(PreparedStatement statement, int first, String groupId, TopicPartition partition)
            throws SQLException {
        statement.setString(first, groupId);
        statement.setString(first + 1, partition.topic());
        statement.setInt(first + 2, partition.partition());
    }
}
