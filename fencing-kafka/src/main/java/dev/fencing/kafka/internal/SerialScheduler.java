package dev.fencing.kafka.internal;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Collection;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;

/**
 * The serial mode: every record on the poll thread, in offset order, in units of work ({@link UnitOfWork}) that
 * commit the handler's effects, the raised watermarks and the offsets together. A rebalance during a unit rolls
 * it back. Poll thread only, except {@link #watermarksHeld()}.
 */
public final class SerialScheduler<K, V> implements Scheduler {
    private final UnitOfWork<K, V> unit;
    private final PartitionOwnership ownership;

    public SerialScheduler(UnitOfWork<K, V> unit, PartitionOwnership ownership) {
        this.unit = unit;
        this.ownership = ownership;
    }

    @Override
    public Duration pollTimeout(Duration configured) {
        return configured;
    }

    @Override
    public void handle(ConsumerRecords<ByteBuffer, ByteBuffer> records) {
        if (!records.isEmpty()) {
            unit.run(records);
        }
    }

    @Override
    public void assigned(Collection<TopicPartition> partitions) {
        unit.abortIfOpen();
    }

    @Override
    public void release(Collection<TopicPartition> partitions, boolean commit) {
        unit.abortIfOpen();
    }

    @Override
    public int watermarksHeld() {
        return ownership.held();
    }

    @Override
    public int recordsHeld() {
        return 0;
    }

    @Override
    public boolean isWorkerThread() {
        return false;
    }

    @Override
    public void close() {}
}
