package dev.fencing.bench;

import dev.fencing.kafka.PartitionProgress;
import dev.fencing.kafka.PartitionState;
import dev.fencing.kafka.PostgresWatermarkStore;
import dev.fencing.kafka.StalePartitionStateException;
import dev.fencing.kafka.WatermarkStore;
import dev.fencing.kafka.WatermarkStoreException;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.JdbiException;

/**
 * A prototype of a faster write path for {@link PostgresWatermarkStore}, same tables, same contract (offsets
 * compare-and-set against the loaded offset, watermarks only go up), to measure what the shipped store's
 * {@code save} costs. Per unit it sends two statements besides the handler's:
 *
 * <ol>
 *   <li>the offsets of all the unit's partitions as one JDBC batch of compare-and-set statements (one round
 *       trip; any count other than 1 fails the unit with {@link StalePartitionStateException});
 *   <li>the raised watermarks of all the unit's partitions as one {@code INSERT ... SELECT FROM unnest ... ON
 *       CONFLICT DO UPDATE ... WHERE stored < new}: each row is one probe of the primary key, so the cost is
 *       linear whatever plan PostgreSQL caches for the statement.
 * </ol>
 *
 * The shipped store now writes the same two statements (its {@code RAISE_WATERMARKS} came from here); it
 * used to join the keys with the table in an UPDATE, and once pgjdbc prepared that on the server (the 5th
 * execution) PostgreSQL could cache a generic plan comparing every input key with every stored key of the
 * partition: quadratic, seconds per unit of 2,000 keys. What still differs: this prototype runs the
 * transaction at the connection's default isolation (PostgreSQL's default is READ COMMITTED) where the
 * shipped store sends {@code SET TRANSACTION ISOLATION LEVEL READ COMMITTED} first, one statement per unit,
 * so the two cases side by side show that statement's cost. Loading is the shipped store's.
 */
final class OneUpsertWatermarkStore implements WatermarkStore<Handle> {
    private static final String INSERT_OFFSET = "INSERT INTO fencing.kafka_offset"
            + " (consumer_group, topic, kafka_partition, next_offset) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING";
    private static final String UPDATE_OFFSET = "UPDATE fencing.kafka_offset SET next_offset = ?, updated_at = now()"
            + " WHERE consumer_group = ? AND topic = ? AND kafka_partition = ? AND next_offset = ?";
    private static final String LOAD_OFFSET = "SELECT next_offset FROM fencing.kafka_offset"
            + " WHERE consumer_group = ? AND topic = ? AND kafka_partition = ?";
    private static final String RAISE_WATERMARKS =
            "INSERT INTO fencing.kafka_watermark (consumer_group, topic, kafka_partition, record_key, fence_token)"
                    + " SELECT ?, u.topic, u.p, u.k, u.t FROM unnest(?::text[], ?::int[], ?::bytea[], ?::bigint[])"
                    + " AS u(topic, p, k, t)"
                    + " ON CONFLICT (consumer_group, topic, kafka_partition, record_key) DO UPDATE"
                    + " SET fence_token = EXCLUDED.fence_token, updated_at = now()"
                    + " WHERE fencing.kafka_watermark.fence_token < EXCLUDED.fence_token";

    private final Jdbi jdbi;
    private final PostgresWatermarkStore loader;

    OneUpsertWatermarkStore(Jdbi jdbi) {
        this.jdbi = jdbi;
        this.loader = PostgresWatermarkStore.create(jdbi);
    }

    @Override
    public PartitionState load(String groupId, TopicPartition partition) {
        return loader.load(groupId, partition);
    }

    @Override
    public void commit(String groupId, Function<? super Handle, List<PartitionProgress>> work) {
        try {
            jdbi.useTransaction(handle -> save(handle.getConnection(), groupId, work.apply(handle)));
        } catch (JdbiException | SQLException e) {
            throw new WatermarkStoreException(
                    "could not commit a batch of group " + groupId + ": " + e.getMessage(), e);
        }
    }

    private static void save(Connection connection, String groupId, List<PartitionProgress> progress)
            throws SQLException {
        saveOffsets(connection, groupId, progress);
        List<String> topics = new ArrayList<>();
        List<Integer> partitions = new ArrayList<>();
        List<byte[]> keys = new ArrayList<>();
        List<Long> tokens = new ArrayList<>();
        for (PartitionProgress p : progress) {
            for (Map.Entry<Bytes, Long> raised : p.raisedWatermarks().entrySet()) {
                topics.add(p.partition().topic());
                partitions.add(p.partition().partition());
                keys.add(raised.getKey().get());
                tokens.add(raised.getValue());
            }
        }
        if (keys.isEmpty()) {
            return;
        }
        Array topicArray = connection.createArrayOf("text", topics.toArray());
        Array partitionArray = connection.createArrayOf("int4", partitions.toArray());
        Array keyArray = connection.createArrayOf("bytea", keys.toArray(new byte[0][]));
        Array tokenArray = connection.createArrayOf("int8", tokens.toArray());
        try (PreparedStatement statement = connection.prepareStatement(RAISE_WATERMARKS)) {
            statement.setString(1, groupId);
            statement.setArray(2, topicArray);
            statement.setArray(3, partitionArray);
            statement.setArray(4, keyArray);
            statement.setArray(5, tokenArray);
            statement.executeUpdate();
        } finally {
            topicArray.free();
            partitionArray.free();
            keyArray.free();
            tokenArray.free();
        }
    }

    /** Every partition's compare-and-set in one round trip; fails the unit if any finds another offset. */
    private static void saveOffsets(Connection connection, String groupId, List<PartitionProgress> progress)
            throws SQLException {
        List<PartitionProgress> inserts = new ArrayList<>();
        List<PartitionProgress> updates = new ArrayList<>();
        for (PartitionProgress p : progress) {
            (p.expectedOffset() < 0 ? inserts : updates).add(p);
        }
        try (PreparedStatement statement = connection.prepareStatement(INSERT_OFFSET)) {
            for (PartitionProgress p : inserts) {
                statement.setString(1, groupId);
                statement.setString(2, p.partition().topic());
                statement.setInt(3, p.partition().partition());
                statement.setLong(4, p.nextOffset());
                statement.addBatch();
            }
            requireOne(connection, groupId, inserts, inserts.isEmpty() ? new int[0] : statement.executeBatch());
        }
        try (PreparedStatement statement = connection.prepareStatement(UPDATE_OFFSET)) {
            for (PartitionProgress p : updates) {
                statement.setLong(1, p.nextOffset());
                statement.setString(2, groupId);
                statement.setString(3, p.partition().topic());
                statement.setInt(4, p.partition().partition());
                statement.setLong(5, p.expectedOffset());
                statement.addBatch();
            }
            requireOne(connection, groupId, updates, updates.isEmpty() ? new int[0] : statement.executeBatch());
        }
    }

    private static void requireOne(Connection connection, String groupId, List<PartitionProgress> sent, int[] counts)
            throws SQLException {
        for (int i = 0; i < counts.length; i++) {
            if (counts[i] != 1) {
                PartitionProgress p = sent.get(i);
                throw new StalePartitionStateException(
                        groupId, p.partition(), p.expectedOffset(), storedOffset(connection, groupId, p.partition()));
            }
        }
    }

    private static long storedOffset(Connection connection, String groupId, TopicPartition partition)
            throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(LOAD_OFFSET)) {
            statement.setString(1, groupId);
            statement.setString(2, partition.topic());
            statement.setInt(3, partition.partition());
            try (ResultSet rows = statement.executeQuery()) {
                return rows.next() ? rows.getLong(1) : -1;
            }
        }
    }
}
