package dev.fencing.bench;

import dev.fencing.kafka.FencedRecords;
import dev.fencing.testsupport.KafkaEndpoint;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The Kafka benchmarks' input: {@code records} stamped records {@code key-(i % keys)} / {@code value-i}, the
 * token rising every {@code keys} records (so each record of a key carries a newer token than the one
 * before it), and from the third pass over the keys on every 100th record carries token 1 instead, older
 * than its key's watermark (about 1% stale).
 *
 * <p>Why token 1 and not "one older than its neighbours", as an earlier version did: the record of a key
 * just before the stale one carries that older token, so the key's watermark equals it, and a non-strict
 * consumer accepts equal tokens: none of those records was stale. With {@code keys} a multiple of 100 the
 * same keys are always the marked ones, so "two older" fails the same way one pass later.
 */
final class FencedTopic {
    private FencedTopic() {}

    /** Writes the topic once; returns how many records carry a stale token. */
    static int produce(KafkaEndpoint kafka, String topic, int records, int keys) {
        return produce(kafka, topic, records, keys, keys);
    }

    /**
     * Like {@link #produce(KafkaEndpoint, String, int, int)}, the token rising every {@code tokenEvery}
     * records instead of every {@code keys}: each key then carries one token for {@code tokenEvery / keys}
     * records in a row. At least {@code keys}, so that every key has seen token 2 before the stale records
     * start.
     */
    static int produce(KafkaEndpoint kafka, String topic, int records, int keys, int tokenEvery) {
        if (tokenEvery < keys) {
            throw new IllegalArgumentException("tokenEvery must be >= keys (" + keys + "), got " + tokenEvery);
        }
        Map<String, Object> config = new HashMap<>();
        config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        config.put(ProducerConfig.ACKS_CONFIG, "all");
        config.put(ProducerConfig.LINGER_MS_CONFIG, 20);
        config.put(ProducerConfig.BATCH_SIZE_CONFIG, 512 * 1024);
        int stale = 0;
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(config, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < records; i++) {
                long token = i / tokenEvery + 1;
                if (i % 100 == 99 && token > 2) {
                    token = 1; // below the watermark of pass 2 or later
                    stale++;
                }
                producer.send(FencedRecords.create(topic, "key-" + (i % keys), "value-" + i, token));
            }
            producer.flush();
        }
        return stale;
    }
}
