package dev.fencing.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.example.reservations.ReservationService;
import dev.fencing.kafka.FencedRecords;
import dev.fencing.spring.internal.DeclaredConsumers;
import dev.fencing.spring.internal.FencingConsumersEndpoint;
import dev.fencing.spring.internal.FencingHealthIndicator;
import dev.fencing.testsupport.EmbeddedPostgresServer;
import dev.fencing.testsupport.KafkaEndpoint;
import dev.fencing.testsupport.KafkaServers;
import dev.fencing.testsupport.ZooKeeperServers;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The declared consumer of the example service ({@code reservation-log}, a transactional handler with its
 * watermarks in PostgreSQL) while its real PostgreSQL server is stopped: the consumer retries on its own and
 * health says DOWN ("retrying"); past {@code fencing.retry.max.ms} it fails, health says DOWN ("failed"); with the
 * database back, the actuator operation restarts it, and every record is applied exactly once.
 */
class DeclaredConsumerRecoveryIT {
    private static final Duration CONDITION = Duration.ofSeconds(60);

    @Test
    void aConsumerRetriesWhileItsDatabaseIsAwayFailsPastItsBoundAndRestartsWithoutLosingOrRepeatingARecord()
            throws Exception {
        KafkaEndpoint kafka = KafkaServers.shared();
        String topic = "recovery-events-" + System.nanoTime();
        kafka.createTopic(topic, 1);
        kafka.createTopic(topic + ".dlt", 1);
        try (EmbeddedPostgresServer db = EmbeddedPostgresServer.builder().build();
                ConfigurableApplicationContext service = service(db, kafka, topic);
                Producer<String, String> producer = producer(kafka)) {
            Jdbi rows = Jdbi.create(db.jdbcUrl(), db.user(), db.password());
            DeclaredConsumers consumers = service.getBean(DeclaredConsumers.class);
            FencingHealthIndicator health = service.getBean(FencingHealthIndicator.class);
            FencingConsumersEndpoint endpoint = service.getBean(FencingConsumersEndpoint.class);
            producer.send(FencedRecords.create(topic, "R-1", "reserved 1", 1)).get();
            await().atMost(CONDITION).until(() -> logged(rows).size() == 1);
            assertThat(health.health().getStatus()).isEqualTo(Status.UP);
            assertThatThrownBy(() -> endpoint.restart("reservation-log"))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("is running, not failed");

            db.stop();
            producer.send(FencedRecords.create(topic, "R-1", "reserved 2", 2)).get();
            await().atMost(CONDITION)
                    .until(() -> consumers.states().get("reservation-log").startsWith("retrying"));
            Health retrying = health.health();
            assertThat(retrying.getStatus()).isEqualTo(Status.DOWN);
            assertThat(retrying.getDetails().get("consumers").toString()).contains("retrying");

            await().atMost(CONDITION)
                    .until(() -> consumers.states().get("reservation-log").startsWith("failed"));
            assertThat(health.health().getStatus()).isEqualTo(Status.DOWN);
            assertThat(endpoint.consumers().get("reservation-log")).startsWith("failed");

            db.start();
            producer.send(FencedRecords.create(topic, "R-1", "reserved 3", 3)).get();
            assertThat(endpoint.restart("reservation-log")).containsKey("reservation-log");
            await().atMost(CONDITION).until(() -> logged(rows).size() == 3);
            assertThat(logged(rows)).containsExactly("1 reserved 1", "2 reserved 2", "3 reserved 3");
            await().atMost(CONDITION).until(() -> health.health().getStatus().equals(Status.UP));
            assertThat(consumers.states()).isEqualTo(Map.of("reservation-log", "running"));
        }
    }

    private static ConfigurableApplicationContext service(
            EmbeddedPostgresServer db, KafkaEndpoint kafka, String topic) {
        return new SpringApplicationBuilder(ReservationService.class)
                .web(WebApplicationType.NONE)
                .properties(Map.of(
                        "DATABASE_URL",
                        db.jdbcUrl(),
                        "DATABASE_USER",
                        db.user(),
                        "DATABASE_PASSWORD",
                        db.password() == null ? "" : db.password(),
                        "ZOOKEEPER_CONNECT",
                        ZooKeeperServers.shared().connectString(),
                        "KAFKA_BOOTSTRAP",
                        kafka.bootstrapServers(),
                        "spring.autoconfigure.exclude",
                        "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration",
                        "spring.datasource.hikari.connection-timeout",
                        "1000"))
                // arguments: application.properties names the service's own topic, over default properties
                .run(
                        "--fencing.kafka.consumers.reservation-log.topics=" + topic,
                        // short enough for a test to wait out: the consumer fails 3 s into the outage
                        "--fencing.kafka.consumers.reservation-log.properties.fencing.retry.max.ms=3000");
    }

    private static Producer<String, String> producer(KafkaEndpoint kafka) {
        return new KafkaProducer<>(
                Map.of("bootstrap.servers", kafka.bootstrapServers(), "enable.idempotence", true, "acks", "all"),
                new StringSerializer(),
                new StringSerializer());
    }

    private static List<String> logged(Jdbi rows) {
        return rows.withHandle(h -> h.createQuery("SELECT token || ' ' || event FROM reservation_log ORDER BY id")
                .mapTo(String.class)
                .list());
    }
}
