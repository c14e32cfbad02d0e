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

/**
 * Lazy loading, for both schedulers: before a poll's records of a partition are decided, every key among them
 * that the partition's table does not hold gets a mark, with its stored token or none, in one store call. The
 * serial unit calls it after the partition's lock (what the store returns cannot be overtaken by another
 * member's commit during the unit); the key-parallel runner before it dispatches the records, so a worker never
 * adds a key the poll thread could load too.
 */
final class MissingWatermarks {
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
