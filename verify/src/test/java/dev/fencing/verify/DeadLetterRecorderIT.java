package dev.fencing.verify;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.kafka.DeadLetterHeaders;
import dev.fencing.testsupport.KafkaEndpoint;
import dev.fencing.testsupport.KafkaServers;
import dev.fencing.testsupport.PostgresEndpoint;
import dev.fencing.testsupport.PostgresServers;
import dev.fencing.verify.checker.DeadLetter;
import dev.fencing.verify.checker.Observed;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The dead-letter topic copied into the table the checker reads, on a real broker and a real database. */
class DeadLetterRecorderIT {
    private static final Duration DRAIN = Duration.ofSeconds(30);

    private static KafkaEndpoint kafka;
    private static PostgresEndpoint database;

    @BeforeAll
    static void start() {
        kafka = KafkaServers.shared();
        database = PostgresServers.shared().createDatabase("dead_letter_recorder_it");
    }

    @AfterAll
    static void stop() {
        database.close();
    }

    @Test
    void deadLettersWithoutTheirOriginAreEachKeptWhileOneOriginWrittenTwiceIsOneRow() throws Exception {
        // given: two dead letters without origin headers (their origin reads as partition -1 offset -1), and one
        // dead letter of a known origin written twice
        String topic = "dlt-no-origin";
        kafka.createTopic(topic, 1);
        send(topic, "r1", "1000001", null, null);
        send(topic, "r2", "2000001", null, null);
        send(topic, "r3", "3000001", "0", "7");
        send(topic, "r3", "3000001", "0", "7");
        DataSource dataSource = database.dataSource();
        RunTables.prepare(dataSource, Mode.CONTROL, 1);

        // when
        DeadLetterRecorder recorder =
                new DeadLetterRecorder(kafka.bootstrapServers(), topic, dataSource, Mode.CONTROL.schema());
        recorder.start();
        recorder.drainAndStop(DRAIN);

        // then
        List<DeadLetter> letters;
        try (Connection connection = dataSource.getConnection()) {
            letters = Observed.read(connection, Mode.CONTROL.schema()).deadLetters();
        }
        assertThat(letters).extracting(DeadLetter::op).containsExactlyInAnyOrder(1000001L, 2000001L, 3000001L);
    }

    @Test
    void copyingTheTopicAgainAddsNoRowEvenForDeadLettersWithoutTheirOrigin() throws Exception {
        // given: the topic copied once, two of its dead letters without origin headers
        String topic = "dlt-copied-twice";
        kafka.createTopic(topic, 1);
        send(topic, "r1", "1000001", null, null);
        send(topic, "r2", "2000001", null, null);
        send(topic, "r3", "3000001", "0", "7");
        DataSource dataSource = database.dataSource();
        RunTables.prepare(dataSource, Mode.CONTROL, 1);
        copy(topic, dataSource);

        // when: the copy runs again from the topic's beginning
        copy(topic, dataSource);

        // then: each dead letter of the topic is still one row, not a stale refusal counted twice
        List<DeadLetter> letters;
        try (Connection connection = dataSource.getConnection()) {
            letters = Observed.read(connection, Mode.CONTROL.schema()).deadLetters();
        }
        assertThat(letters).extracting(DeadLetter::op).containsExactlyInAnyOrder(1000001L, 2000001L, 3000001L);
    }

    private static void copy(String topic, DataSource dataSource) throws InterruptedException {
        DeadLetterRecorder recorder =
                new DeadLetterRecorder(kafka.bootstrapServers(), topic, dataSource, Mode.CONTROL.schema());
        recorder.start();
        recorder.drainAndStop(DRAIN);
    }

    @Test
    void anOriginHeaderThatIsNotANumberStopsTheCopyNamingTheHeaderItsValueAndTheDeadLetter() throws Exception {
        String topic = "dlt-bad-origin";
        kafka.createTopic(topic, 1);
        send(topic, "r1", "1000001", "0", "7");
        send(topic, "r1", "1000002", "zero", "8");
        DataSource dataSource = database.dataSource();
        RunTables.prepare(dataSource, Mode.CONTROL, 1);

        DeadLetterRecorder recorder =
                new DeadLetterRecorder(kafka.bootstrapServers(), topic, dataSource, Mode.CONTROL.schema());
        recorder.start();

        assertThatThrownBy(() -> recorder.drainAndStop(DRAIN))
                .isInstanceOf(VerifyException.class)
                .hasMessageContaining(DeadLetterHeaders.ORIGIN_PARTITION)
                .hasMessageContaining("'zero'")
                .hasMessageContaining(topic + "-0 offset 1");
    }

    private static void send(String topic, String key, String value, String partition, String offset) {
        Map<String, Object> config = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(config, new StringSerializer(), new StringSerializer())) {
            ProducerRecord<String, String> record = new ProducerRecord<>(topic, key, value);
            record.headers().add(DeadLetterHeaders.REASON, DeadLetter.STALE.getBytes(StandardCharsets.UTF_8));
            if (partition != null) {
                record.headers().add(DeadLetterHeaders.ORIGIN_PARTITION, partition.getBytes(StandardCharsets.UTF_8));
            }
            if (offset != null) {
                record.headers().add(DeadLetterHeaders.ORIGIN_OFFSET, offset.getBytes(StandardCharsets.UTF_8));
            }
            producer.send(record).get();
        } catch (Exception e) {
            throw new AssertionError("cannot send a dead letter to " + topic, e);
        }
    }
}
