package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.kafka;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.producer;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencing.kafka.internal.FenceDecision;
import dev.fencing.kafka.internal.TokenHeaderReader;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteBufferDeserializer;
import org.junit.jupiter.api.Test;

/**
 * The token header read in place (the fenced consumer's reader on this Kafka version) and through Kafka's public
 * API agree on records as a real fetch delivers them, header layouts a producer may write included.
 */
class FetchedTokenHeadersIT {

    @Test
    void theInPlaceAndThePublicReaderAgreeOnFetchedRecords() {
        // given: records whose headers hold a token, none, two, an unreadable one, and other headers around it
        String topic = newTopic("token-headers", 1);
        List<Long> expected = new ArrayList<>();
        try (KafkaProducer<String, String> producer = producer()) {
            send(producer, topic, expected, 7, token(7));
            send(producer, topic, expected, FenceDecision.MISSING_TOKEN);
            send(producer, topic, expected, 9, token(3), token(9));
            send(producer, topic, expected, FenceDecision.UNREADABLE_TOKEN, token(9), new byte[] {1, 2, 3});
            send(producer, topic, expected, FenceDecision.UNREADABLE_TOKEN, new byte[8]);
            send(producer, topic, expected, FenceDecision.UNREADABLE_TOKEN, (byte[]) null);
            ProducerRecord<String, String> surrounded = new ProducerRecord<>(topic, "k", "v");
            surrounded.headers().add("trace", new byte[] {1});
            surrounded.headers().add(FenceTokenHeader.NAME, token(11));
            surrounded.headers().add("fencing-tokens", token(12));
            producer.send(surrounded);
            expected.add(11L);
            producer.flush();
        }

        // when: read as the fenced consumer fetches them
        List<ConsumerRecord<ByteBuffer, ByteBuffer>> records = fetch(topic, expected.size());

        // then
        assertThat(TokenHeaderReader.get().inPlace()).isTrue();
        List<Long> inPlace = new ArrayList<>();
        List<Long> publicApi = new ArrayList<>();
        for (ConsumerRecord<ByteBuffer, ByteBuffer> record : records) {
            inPlace.add(TokenHeaderReader.get().read(record.headers())); // first: the public read decodes them
            publicApi.add(TokenHeaderReader.publicApi().read(record.headers()));
        }
        assertThat(inPlace).isEqualTo(expected);
        assertThat(publicApi).isEqualTo(expected);
    }

    private static void send(
            KafkaProducer<String, String> producer, String topic, List<Long> expected, long token, byte[]... values) {
        ProducerRecord<String, String> record = new ProducerRecord<>(topic, "k", "v");
        for (byte[] value : values) {
            record.headers().add(new RecordHeader(FenceTokenHeader.NAME, value));
        }
        producer.send(record);
        expected.add(token);
    }

    private static byte[] token(long token) {
        return FenceTokenHeader.encode(token);
    }

    private static List<ConsumerRecord<ByteBuffer, ByteBuffer>> fetch(String topic, int count) {
        List<ConsumerRecord<ByteBuffer, ByteBuffer>> records = new ArrayList<>();
        try (KafkaConsumer<ByteBuffer, ByteBuffer> consumer = new KafkaConsumer<>(
                Map.of(
                        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                        kafka().bootstrapServers(),
                        ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG,
                        false),
                new ByteBufferDeserializer(),
                new ByteBufferDeserializer())) {
            TopicPartition partition = new TopicPartition(topic, 0);
            consumer.assign(List.of(partition));
            consumer.seekToBeginning(List.of(partition));
            await().atMost(Duration.ofSeconds(30)).until(() -> {
                consumer.poll(Duration.ofMillis(100)).forEach(records::add);
                return records.size() >= count;
            });
        }
        return records;
    }
}
