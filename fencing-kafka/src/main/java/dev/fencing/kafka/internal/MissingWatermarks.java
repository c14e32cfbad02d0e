package dev.fencing.kafka.internal;

import dev.fencing.kafka.spi.WatermarkStore;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Lazy loading, for both schedulers: before a poll's records of a partition are decided, every key among them
 * that the partition's table does not hold gets a mark, with its stored token or none, in one store call. The
 * serial unit calls it after the partition's lock (what the store returns cannot be overtaken by another
 * member's commit during the unit); the key-parallel runner before it dispatches the records, so a worker never
 * adds a key the poll thread could load too.
 */
final class MissingWatermarks {
    private static final Logger LOG = LoggerFactory.getLogger(MissingWatermarks.class);

    private MissingWatermarks() {}

    /**
     * Loads the keys of {@code records} that {@code table} holds no mark for; the table is read and changed
     * only under {@code monitor}, the store is called outside it.
     *
     * @return how many of them had a stored watermark
     * @throws dev.fencing.kafka.WatermarkStoreException if the store cannot load
     */
    static int load(
            WatermarkStore<?> store,
            String groupId,
            TopicPartition partition,
            PartitionWatermarks table,
            Object monitor,
            List<ConsumerRecord<ByteBuffer, ByteBuffer>> records) {
        Set<Bytes> missing;
        synchronized (monitor) {
            missing = missing(table, records);
        }
        if (missing == null) {
            return 0;
        }
        Map<Bytes, Long> found = store.loadWatermarks(groupId, partition, missing);
        synchronized (monitor) {
            for (Bytes key : missing) {
                table.load(key.get(), found.getOrDefault(key, 0L));
            }
        }
        return found.size();
    }

    /**
     * The serial unit's load ({@link #load}'s, on the unit's thread), from a store that keeps applied offsets:
     * a key applied past the first of {@code records} by a key-parallel member keeps its applied offset in the
     * table, whose records up to it the unit then skips ({@link PartitionWatermarks#appliedBefore}).
     *
     * @return how many of the keys had a stored watermark
     */
    static int loadSerial(
            AppliedOffsetStore store,
            String groupId,
            TopicPartition partition,
            PartitionWatermarks table,
            List<ConsumerRecord<ByteBuffer, ByteBuffer>> records) {
        Set<Bytes> missing = missing(table, records);
        if (missing == null) {
            return 0;
        }
        long from = records.get(0).offset();
        AppliedOffsetStore.LoadedKeys loaded = store.loadKeys(groupId, partition, missing, from);
        for (Bytes key : missing) {
            table.load(key.get(), loaded.watermarks().getOrDefault(key, 0L));
        }
        if (!loaded.appliedOffsets().isEmpty()) {
            long highest = -1;
            for (Map.Entry<Bytes, Long> applied : loaded.appliedOffsets().entrySet()) {
                table.appliedThrough(applied.getKey(), applied.getValue());
                highest = Math.max(highest, applied.getValue());
            }
            LOG.info(
                    "group {}: {} key(s) of {} were applied past offset {} by a key-parallel member, up to offset {};"
                            + " their records up to their applied offsets are skipped, not handled again",
                    groupId,
                    loaded.appliedOffsets().size(),
                    partition,
                    from,
                    highest);
        }
        return loaded.watermarks().size();
    }

    /** The keys without a mark, each copied once (the table keeps the array); null if none. */
    private static Set<Bytes> missing(PartitionWatermarks table, List<ConsumerRecord<ByteBuffer, ByteBuffer>> records) {
        Set<Bytes> missing = null;
        for (ConsumerRecord<ByteBuffer, ByteBuffer> record : records) {
            ByteBuffer key = record.key();
            if (key == null) {
                continue;
            }
            byte[] array = key.hasArray() ? key.array() : FetchedBytes.copy(key);
            int offset = key.hasArray() ? key.arrayOffset() + key.position() : 0;
            int length = key.remaining();
            if (table.find(array, offset, length) == PartitionWatermarks.NONE) {
                if (missing == null) {
                    missing = new HashSet<>();
                }
                // a copy: the handler may change the fetched bytes, the table keeps this array
                missing.add(Bytes.wrap(Arrays.copyOfRange(array, offset, offset + length)));
            }
        }
        return missing;
    }
}
