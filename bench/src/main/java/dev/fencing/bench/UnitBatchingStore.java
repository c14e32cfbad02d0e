package dev.fencing.bench;

import dev.fencing.kafka.TransactionalRecordHandler;
import dev.fencing.kafka.spi.PartitionProgress;
import dev.fencing.kafka.spi.PartitionState;
import dev.fencing.kafka.spi.WatermarkStore;
import java.sql.SQLException;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;
import org.jdbi.v3.core.Handle;

/**
 * A {@link WatermarkStore} around another that sends the balance updates a unit's records collected as one
 * JDBC batch, inside the unit's transaction, after the last record and before the store saves watermarks and
 * offsets. A {@link TransactionalRecordHandler} is called per record and has no end-of-unit hook, so this is
 * how a user of {@code FencedConsumer} batches a unit's writes today. Used by the poll thread only.
 */
final class UnitBatchingStore implements WatermarkStore<Handle> {
    private final WatermarkStore<Handle> delegate;
    private BalanceTable.Batch unit;

    UnitBatchingStore(WatermarkStore<Handle> delegate) {
        this.delegate = delegate;
    }

    /** Adds one accepted record's update to the running unit; only from the handler. */
    void add(String account, int amount) {
        if (unit == null) {
            throw new IllegalStateException("a record was handled outside a unit of work");
        }
        unit.add(account, amount);
    }

    @Override
    public PartitionState load(String groupId, TopicPartition partition) {
        return delegate.load(groupId, partition);
    }

    // The rest is the delegate's, so that the fenced side locks its partitions and loads watermarks lazily
    // as the consumer does with the store alone (the interface's defaults would skip the locks and load
    // whole partitions).
    @Override
    public boolean loadsLazily() {
        return delegate.loadsLazily();
    }

    @Override
    public long loadOffset(String groupId, TopicPartition partition) {
        return delegate.loadOffset(groupId, partition);
    }

    @Override
    public Map<Bytes, Long> loadWatermarks(String groupId, TopicPartition partition, Collection<Bytes> keys) {
        return delegate.loadWatermarks(groupId, partition, keys);
    }

    @Override
    public void lockPartition(Handle unit, String groupId, TopicPartition partition, long expectedOffset) {
        delegate.lockPartition(unit, groupId, partition, expectedOffset);
    }

    @Override
    public void commit(String groupId, Function<? super Handle, List<PartitionProgress>> work) {
        delegate.commit(groupId, handle -> {
            unit = new BalanceTable.Batch();
            try {
                List<PartitionProgress> progress = work.apply(handle);
                unit.flush(handle.getConnection());
                return progress;
            } catch (SQLException e) {
                throw new IllegalStateException("balance batch failed: " + e.getMessage(), e);
            } finally {
                unit = null;
            }
        });
    }
}
