package dev.fencing.kafka;

import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * Applies one accepted record. The serial consumer calls it on its poll thread, one record at a time, in
 * offset order within a partition (so in order per key). The key-parallel consumer ({@code maxConcurrency}
 * above 1) calls it from several worker threads at once, one record at a time per key, in offset order per
 * key: there it must be thread-safe, and so must the deserializers. A record reaches the handler only if its
 * token is at least the highest token accepted so far for its key (strictly higher with {@code
 * fencing.policy=strict}).
 *
 * <p>Throwing stops the consumer: offsets are committed up to, not including, the failed record, and
 * {@link FencedConsumer#run()} throws a {@link RecordHandlingException}. A handler that wants a poison
 * record skipped must catch and park it itself.
 *
 * <pre>{@code
 * RecordHandler<String, String> handler = (record, token) -> inventory.apply(record.key(), record.value());
 * }</pre>
 */
@FunctionalInterface
public interface RecordHandler<K, V> {
    void handle(ConsumerRecord<K, V> record, long token);
}
