package dev.fencing.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.example.reservations.ReservationService;
import com.example.reservations.Reservations;
import dev.fencing.jdbc.WriteOutcome;
import dev.fencing.testsupport.ZooKeeperServers;
import dev.fencing.testsupport.spring.FencingTestServers;
import dev.fencing.testsupport.spring.FencingTestServers.Server;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.core.env.Environment;
import org.springframework.test.context.TestPropertySource;

/**
 * The Spring Boot test of the README and docs/testing.md: one annotation starts ZooKeeper and PostgreSQL and
 * makes their addresses the service's properties (its {@code application.properties} reads them from
 * environment variables this JVM does not have); the service then takes locks and writes under their tokens.
 */
@SpringBootTest(classes = ReservationService.class)
@FencingTestServers({Server.ZOOKEEPER, Server.POSTGRES}) // also Server.KAFKA, Server.REDIS
// its declared consumer would need Kafka, and Boot's Redis support (on this module's test class path) a Redis
@TestPropertySource(properties = {"fencing.kafka.enabled=false", "fencing.redis.enabled=false"})
class FencingTestServersIT {
    @Autowired
    Reservations reservations;

    @Autowired
    Jdbi jdbi;

    @Autowired
    Environment environment;

    @Test
    void theServersAddressesAreTheServicesPropertiesAndItsLockedWritesCarryTokens() {
        assertThat(environment.getProperty("fencing.zookeeper.connect-string"))
                .isEqualTo(ZooKeeperServers.shared().connectString());
        assertThat(environment.getProperty("spring.datasource.url"))
                .startsWith("jdbc:postgresql:")
                .contains("spring_test");

        jdbi.useHandle(h -> h.execute("INSERT INTO inventory (sku, stock) VALUES ('T-1', 10)"));
        WriteOutcome first = reservations.reserve("T-1", 1, 0);
        WriteOutcome second = reservations.reserve("T-1", 1, 0);

        assertThat(first).isInstanceOf(WriteOutcome.Applied.class);
        assertThat(((WriteOutcome.Applied) second).offeredToken())
                .isGreaterThan(((WriteOutcome.Applied) first).offeredToken());
        int stock = jdbi.withHandle(h -> h.createQuery("SELECT stock FROM inventory WHERE sku = 'T-1'")
                .mapTo(Integer.class)
                .one());
        assertThat(stock).isEqualTo(8);
    }
}
