package dev.fencing.kafka;

import dev.fencing.kafka.spi.WatermarkStore;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * Applies one accepted record inside the {@link WatermarkStore}'s transaction, so that its effect, the
 * raised watermark and the consumed offset commit together or not at all. With {@link
 * PostgresWatermarkStore} the transaction is a Jdbi {@code Handle}.
 *
 * <pre>{@code
 * TransactionalRecordHandler<Handle, String, String> handler = (handle, record, token) ->
 *         handle.execute("UPDATE stock SET reserved = reserved + 1 WHERE sku = ?", record.key());
 * }</pre>
 *
 * Throwing rolls back the whole batch it was part of and stops the consumer ({@link
 * RecordHandlingException}); after a restart the batch is read again from the store's offsets.
 */
@FunctionalInterface
public interface TransactionalRecordHandler<T, K, V> {
    void handle(T transaction, ConsumerRecord<K, V> record, long token);
}
