package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.committed;
import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.header;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.producer;
import static dev.fencing.kafka.KafkaFixture.readAll;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.IntegerDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;

/** Issue test 5: records from a plain producer without a readable token are dead-lettered, never handled. */
class UnreadableTokenIT {

    @Test
    void recordsWithoutAReadableTokenAreDeadLetteredWithTheReason() throws Exception {
        // given: a plain KafkaProducer that knows nothing about fencing
        String topic = newTopic("unreadable", 1);
        try (KafkaProducer<String, String> producer = producer()) {
            producer.send(new ProducerRecord<>(topic, "sku-1", "no header")).get();
            producer.send(withHeader(topic, "sku-1", "three bytes", new byte[] {0, 0, 7}))
                    .get();
            producer.send(withHeader(topic, "sku-1", "text", "42".getBytes(StandardCharsets.UTF_8)))
                    .get();
            producer.send(withHeader(topic, "sku-1", "zero", new byte[8])).get();
            producer.send(withHeader(topic, null, "no key", FenceTokenHeader.encode(3)))
                    .get();
            producer.send(FencedRecords.create(topic, "sku-1", "good", 1)).get();
        }
        List<String> handled = Collections.synchronizedList(new ArrayList<>());
        String group = newGroup("unreadable");

        // when
        try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .topics(topic)
                .heapOnlyWatermarksLostOnRestart()
                .handler((record, token) -> handled.add(record.value() + "@" + token))
                .build()) {
            consumer.start();
            await().atMost(Duration.ofSeconds(30)).until(() -> committed(group, topic) == 6);
        }

        // then
        assertThat(handled).containsExactly("good@1");
        List<ConsumerRecord<String, String>> deadLetters = readAll(topic + ".dlt", 5);
        assertThat(deadLetters)
                .extracting(
                        ConsumerRecord::value,
                        r -> header(r, DeadLetterHeaders.REASON),
                        r -> header(r, DeadLetterHeaders.ORIGIN_OFFSET))
                .containsExactly(
                        tuple("no header", "MISSING_TOKEN", "0"),
                        tuple("three bytes", "UNREADABLE_TOKEN", "1"),
                        tuple("text", "UNREADABLE_TOKEN", "2"),
                        tuple("zero", "UNREADABLE_TOKEN", "3"),
                        tuple("no key", "MISSING_KEY", "4"));
        assertThat(header(deadLetters.get(1), DeadLetterHeaders.DETAIL))
                .isEqualTo("header fencing-token must be exactly 8 bytes, got 3");
        assertThat(header(deadLetters.get(3), DeadLetterHeaders.DETAIL))
                .isEqualTo("header fencing-token holds 0, a token must be > 0");
        assertThat(deadLetters).allSatisfy(r -> {
            assertThat(header(r, DeadLetterHeaders.ORIGIN_TOPIC)).isEqualTo(topic);
            assertThat(header(r, DeadLetterHeaders.ORIGIN_PARTITION)).isEqualTo("0");
        });
    }

    /**
     * Kafka's console producer ({@code --property parse.headers=true}) writes header values as text: the token
     * 42 becomes the 8 bytes {@code 00000042}, which read as a big-endian long are about 3.47e18. Taken for a
     * token, that record would be applied and hold its key's watermark above every real token, so the writer's
     * next record (43) would be refused as stale; read as unreadable, it is dead-lettered and 43 is applied.
     */
    @Test
    void aTokenWrittenAsEightBytesOfTextIsDeadLetteredAndDoesNotPoisonItsKeysWatermark() throws Exception {
        String topic = newTopic("text-token", 1);
        try (KafkaProducer<String, String> producer = producer()) {
            producer.send(withHeader(topic, "sku-1", "console 42", "00000042".getBytes(StandardCharsets.US_ASCII)))
                    .get();
            producer.send(FencedRecords.create(topic, "sku-1", "set 43", 43)).get();
        }

        List<String> handled = handledValues(topic, newGroup("text-token"), new StringDeserializer(), 2);

        assertThat(handled).containsExactly("set 43");
        List<ConsumerRecord<String, String>> deadLetters = readAll(topic + ".dlt", 1);
        assertThat(deadLetters)
                .extracting(ConsumerRecord::value, r -> header(r, DeadLetterHeaders.REASON))
                .containsExactly(tuple("console 42", "UNREADABLE_TOKEN"));
        assertThat(header(deadLetters.get(0), DeadLetterHeaders.DETAIL))
                .isEqualTo("header fencing-token holds 3472328296227681330 (the text \"00000042\"), above"
                        + " 72057594037927935 (2^56 - 1), the largest token a header carries");
    }

    @Test
    void aRecordTheDeserializerRefusesIsDeadLetteredAndTheLoopGoesOn() throws Exception {
        String topic = newTopic("undeserializable", 1);
        try (KafkaProducer<String, String> producer = producer()) {
            producer.send(FencedRecords.create(topic, "k", "ab", 1)).get(); // 2 bytes: not an int
            producer.send(FencedRecords.create(topic, "k", "abcd", 2)).get();
        }
        List<Integer> handled = handledValues(topic, newGroup("undeserializable"), new IntegerDeserializer(), 2);
        assertThat(handled).containsExactly(0x61626364);
        List<ConsumerRecord<String, String>> deadLetters = readAll(topic + ".dlt", 1);
        assertThat(deadLetters).hasSize(1);
        assertThat(header(deadLetters.get(0), DeadLetterHeaders.REASON)).isEqualTo("UNREADABLE_RECORD");
        assertThat(deadLetters.get(0).value()).isEqualTo("ab");
    }

    @Test
    void aDeserializerThatReadPartOfTheBytesBeforeFailingLeavesTheDeadLetterWhole() throws Exception {
        String topic = newTopic("half-read", 1);
        try (KafkaProducer<String, String> producer = producer()) {
            producer.send(FencedRecords.create(topic, "k", "bad-value", 1)).get();
            producer.send(FencedRecords.create(topic, "k", "good-value", 2)).get();
        }
        // reads through the buffer, moving its position, and refuses values that start with "bad"
        Deserializer<String> advancing = new Deserializer<>() {
            @Override
            public String deserialize(String topic, byte[] data) {
                return deserialize(topic, null, ByteBuffer.wrap(data));
            }

            @Override
            public String deserialize(String topic, Headers headers, ByteBuffer data) {
                byte[] read = new byte[data.remaining()];
                data.get(read);
                String text = new String(read, StandardCharsets.UTF_8);
                if (text.startsWith("bad")) {
                    throw new IllegalArgumentException("refused " + text);
                }
                return text;
            }
        };
        List<String> handled = handledValues(topic, newGroup("half-read"), advancing, 2);
        assertThat(handled).containsExactly("good-value");
        List<ConsumerRecord<String, String>> deadLetters = readAll(topic + ".dlt", 1);
        assertThat(deadLetters).hasSize(1);
        assertThat(header(deadLetters.get(0), DeadLetterHeaders.REASON)).isEqualTo("UNREADABLE_RECORD");
        assertThat(deadLetters.get(0).value()).isEqualTo("bad-value");
        assertThat(deadLetters.get(0).key()).isEqualTo("k");
    }

    /**
     * The new holder's record (token 20) cannot be read, say while a schema registry is down: it is dead-lettered,
     * but its token passed the fence, so it still raises its key's watermark and the paused ex-holder's later
     * record (token 15) is refused. Without the raise the late record is applied on top of 10 as if 20 had never
     * been written.
     */
    @Test
    void aFreshRecordWhoseValueCannotBeReadStillRaisesItsKeysWatermarkSoAStalerOneIsRefused() throws Exception {
        String topic = newTopic("unreadable-fresh", 1);
        try (KafkaProducer<String, String> producer = producer()) {
            producer.send(FencedRecords.create(topic, "sku-1", "set 10", 10)).get();
            producer.send(FencedRecords.create(topic, "sku-1", "bad: set 20", 20))
                    .get();
            producer.send(FencedRecords.create(topic, "sku-1", "set 11 (late)", 15))
                    .get();
        }
        Deserializer<String> refusingBad = new StringDeserializer() {
            @Override
            public String deserialize(String topic, Headers headers, ByteBuffer data) {
                String text = super.deserialize(topic, headers, data);
                if (text.startsWith("bad")) {
                    throw new IllegalArgumentException("registry unreachable");
                }
                return text;
            }
        };

        List<String> handled = handledValues(topic, newGroup("unreadable-fresh"), refusingBad, 3);

        assertThat(handled).containsExactly("set 10");
        assertThat(readAll(topic + ".dlt", 2))
                .extracting(ConsumerRecord::value, r -> header(r, DeadLetterHeaders.REASON))
                .containsExactly(tuple("bad: set 20", "UNREADABLE_RECORD"), tuple("set 11 (late)", "STALE_TOKEN"));
    }

    /**
     * The other header shapes a text tool writes (Kafka's console producer with {@code parse.headers=true}): a
     * header without a value ({@code fencing-token} with no {@code :}, or the {@code null.marker}), an empty one
     * ({@code fencing-token:}), eight bytes of non-ASCII text, and a malformed header written after a good one
     * (the last one counts). Each is dead-lettered as unreadable, in the serial and the key-parallel mode, and
     * none is handled.
     */
    @Test
    void everyOtherHeaderShapeATextToolWritesIsDeadLetteredInBothModes() throws Exception {
        for (int concurrency : new int[] {1, 4}) {
            String topic = newTopic("header-shapes", 1);
            try (KafkaProducer<String, String> producer = producer()) {
                producer.send(withHeader(topic, "sku-1", "no value", null)).get();
                producer.send(withHeader(topic, "sku-2", "empty", new byte[0])).get();
                producer.send(withHeader(
                                topic,
                                "sku-3",
                                "utf-8 text",
                                "\u00e9\u00e9\u00e9\u00e9".getBytes(StandardCharsets.UTF_8)))
                        .get();
                RecordHeaders twice = new RecordHeaders();
                twice.add(FenceTokenHeader.NAME, FenceTokenHeader.encode(5));
                twice.add(FenceTokenHeader.NAME, "5".getBytes(StandardCharsets.UTF_8));
                producer.send(new ProducerRecord<>(topic, null, "sku-4", "good then text", twice))
                        .get();
                producer.send(FencedRecords.create(topic, "sku-5", "good", 1)).get();
            }
            List<String> handled = Collections.synchronizedList(new ArrayList<>());
            String group = newGroup("header-shapes");

            try (FencedConsumer<String, String> consumer = FencedConsumer.builder(
                            new StringDeserializer(), new StringDeserializer())
                    .properties(consumerConfig(group))
                    .topics(topic)
                    .maxConcurrency(concurrency)
                    .heapOnlyWatermarksLostOnRestart()
                    .handler((record, token) -> handled.add(record.value() + "@" + token))
                    .build()) {
                consumer.start();
                await().atMost(Duration.ofSeconds(30)).until(() -> committed(group, topic) == 5);
            }

            assertThat(handled).as("concurrency %s", concurrency).containsExactly("good@1");
            assertThat(readAll(topic + ".dlt", 4))
                    .as("concurrency %s", concurrency)
                    .extracting(ConsumerRecord::value, r -> header(r, DeadLetterHeaders.REASON))
                    .containsExactlyInAnyOrder( // key-parallel: records of different keys in any order
                            tuple("no value", "UNREADABLE_TOKEN"),
                            tuple("empty", "UNREADABLE_TOKEN"),
                            tuple("utf-8 text", "UNREADABLE_TOKEN"),
                            tuple("good then text", "UNREADABLE_TOKEN"));
        }
    }

    /** Runs a fenced consumer until the group has committed {@code records} offsets; the values it handled. */
    private static <V> List<V> handledValues(String topic, String group, Deserializer<V> values, long records) {
        List<V> handled = Collections.synchronizedList(new ArrayList<>());
        try (FencedConsumer<String, V> consumer = FencedConsumer.builder(new StringDeserializer(), values)
                .properties(consumerConfig(group))
                .topics(topic)
                .heapOnlyWatermarksLostOnRestart()
                .handler((record, token) -> handled.add(record.value()))
                .build()) {
            consumer.start();
            await().atMost(Duration.ofSeconds(30)).until(() -> committed(group, topic) == records);
        }
        return handled;
    }

    private static ProducerRecord<String, String> withHeader(String topic, String key, String value, byte[] token) {
        RecordHeaders headers = new RecordHeaders();
        headers.add(FenceTokenHeader.NAME, token);
        return new ProducerRecord<>(topic, null, key, value, headers);
    }
}
