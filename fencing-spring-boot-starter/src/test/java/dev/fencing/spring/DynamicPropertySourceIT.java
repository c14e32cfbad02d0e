package dev.fencing.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.example.reservations.ReservationService;
import com.example.reservations.Reservations;
import dev.fencing.jdbc.WriteOutcome;
import dev.fencing.testsupport.PostgresEndpoint;
import dev.fencing.testsupport.PostgresServers;
import dev.fencing.testsupport.ZooKeeperServers;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.core.env.Environment;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.context.TestPropertySource;

/**
 * The Spring Boot test of docs/testing.md without {@code @FencingTestServers}: a {@code @DynamicPropertySource}
 * of the test's own gives the service fencing-test-support's servers through their getters ({@code connectString()},
 * {@code jdbcUrl()}, {@code user()}, {@code password()}); the service then takes locks and writes under their
 * tokens.
 */
@SpringBootTest(classes = ReservationService.class)
// its declared consumer would need Kafka, and Boot's Redis support (on this module's test class path) a Redis
@TestPropertySource(properties = {"fencing.kafka.enabled=false", "fencing.redis.enabled=false"})
class DynamicPropertySourceIT {
    @DynamicPropertySource
    static void servers(DynamicPropertyRegistry registry) {
        PostgresEndpoint db = PostgresServers.shared().createDatabase("reservations_test");
        registry.add("spring.datasource.url", db::jdbcUrl);
        registry.add("spring.datasource.username", db::user);
        registry.add("spring.datasource.password", db::password);
        registry.add("fencing.zookeeper.connect-string", ZooKeeperServers.shared()::connectString);
    }

    @Autowired
    Reservations reservations;

    @Autowired
    Jdbi jdbi;

    @Autowired
    Environment environment;

    @Test
    void theGettersAddressesAreTheServicesPropertiesAndItsLockedWritesCarryTokens() {
        assertThat(environment.getProperty("fencing.zookeeper.connect-string"))
                .isEqualTo(ZooKeeperServers.shared().connectString());
        assertThat(environment.getProperty("spring.datasource.url"))
                .startsWith("jdbc:postgresql:")
                .contains("reservations_test");

        jdbi.useHandle(h -> h.execute("INSERT INTO inventory (sku, stock) VALUES ('D-1', 10)"));
        WriteOutcome first = reservations.reserve("D-1", 1, 0);
        WriteOutcome second = reservations.reserve("D-1", 1, 0);

        assertThat(first).isInstanceOf(WriteOutcome.Applied.class);
        assertThat(((WriteOutcome.Applied) second).offeredToken())
                .isGreaterThan(((WriteOutcome.Applied) first).offeredToken());
        int stock = jdbi.withHandle(h -> h.createQuery("SELECT stock FROM inventory WHERE sku = 'D-1'")
                .mapTo(Integer.class)
                .one());
        assertThat(stock).isEqualTo(8);
    }
}
