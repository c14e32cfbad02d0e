package dev.fencing.kafka;

import dev.fencing.FenceTokens;
import dev.fencing.InvalidFenceTokenException;
import java.util.Objects;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * Stamps records with the fence token they were produced under, for a plain {@code KafkaProducer}.
 *
 * <p>The record key is the resource key: all records about one resource share a key, so Kafka puts them
 * in one partition and the consumer sees them in the order they were written. A record without a key is
 * refused, because it has no such order.
 *
 * <pre>{@code
 * Properties props = new Properties();
 * props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
 * props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true); // no reordering or duplicates on retry
 * props.put(ProducerConfig.ACKS_CONFIG, "all");
 * try (KafkaProducer<String, String> producer =
 *         new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
 *     // token: the fence token of the grant the record is written under (a dev.fencing.lock lease's token())
 *     producer.send(FencedRecords.create("inventory", "sku-42", "reserve 1", token));
 * } // close() waits for the send
 * }</pre>
 *
 * <p>Producer settings that keep one key's records in order: {@code enable.idempotence=true} (the default
 * since Kafka 3.0 unless another setting turns it off), which needs {@code acks=all} and
 * {@code max.in.flight.requests.per.connection <= 5}; no custom partitioner that ignores the key; and never
 * add partitions to a topic in use, since that moves keys to other partitions.
 *
 * <p>Stateless and thread-safe.
 */
public final class FencedRecords {
    private FencedRecords() {}

    /**
     * A new record for {@code topic} with the token header, partitioned by key.
     *
     * @throws IllegalArgumentException if the key is null
     * @throws InvalidFenceTokenException if the token is not positive
     */
    public static <K, V> ProducerRecord<K, V> create(String topic, K key, V value, long token) {
        return stamp(new ProducerRecord<>(topic, key, value), token);
    }

    /**
     * A copy of {@code record} whose {@value FenceTokenHeader#NAME} header is {@code token}; any such
     * header the record had is replaced, its other headers are kept.
     *
     * @throws IllegalArgumentException if the record has no key
     * @throws InvalidFenceTokenException if the token is not positive
     */
    public static <K, V> ProducerRecord<K, V> stamp(ProducerRecord<K, V> record, long token) {
        Objects.requireNonNull(record, "record");
        if (record.key() == null) {
            throw new IllegalArgumentException("record for topic " + record.topic()
                    + " has no key; a fenced record needs its resource key as the record key");
        }
        FenceTokens.requirePositive(token, "topic " + record.topic() + " key " + record.key());
        byte[] value = FenceTokenHeader.encode(token);
        Headers headers = new RecordHeaders(record.headers().toArray());
        headers.remove(FenceTokenHeader.NAME);
        headers.add(FenceTokenHeader.NAME, value);
        return new ProducerRecord<>(
                record.topic(), record.partition(), record.timestamp(), record.key(), record.value(), headers);
    }
}
