package com.example.shop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencing.jdbc.WriteOutcome;
import dev.fencing.spring.FencedElectionParticipant;
import dev.fencing.testsupport.PostgresEndpoint;
import dev.fencing.testsupport.PostgresServers;
import dev.fencing.testsupport.ZooKeeperEndpoint;
import dev.fencing.testsupport.ZooKeeperServers;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.Map;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The starter in a service built on spring-boot-starter-parent, with the versions Spring Boot manages
 * (Flyway, Micrometer, Netty, HikariCP, ...) rather than the toolkit's: its dependencies resolve, Boot's
 * Flyway runs the toolkit's migrations with the service's, locked methods get increasing tokens, a write
 * under an older token is refused, and health and meters are on Boot's registries; the scheduled job runs
 * under its lock's token and the instance leads the election, its term's token on the listener.
 */
class ShopApplicationTest {

    @Test
    void theStarterWorksOnSpringBootsOwnDependencyVersions() {
        try (ZooKeeperEndpoint zk = ZooKeeperServers.start();
                PostgresEndpoint db = PostgresServers.start();
                ConfigurableApplicationContext app = new SpringApplicationBuilder(ShopApplication.class)
                        .web(WebApplicationType.NONE)
                        .properties(Map.of(
                                "DATABASE_URL", db.jdbcUrl(),
                                "DATABASE_USER", db.user(),
                                "DATABASE_PASSWORD", db.password() == null ? "" : db.password(),
                                "ZOOKEEPER_CONNECT", zk.connectString()))
                        .run()) {
            app.getBean(Jdbi.class)
                    .useHandle(h -> h.execute("INSERT INTO inventory (sku, stock) VALUES ('A-1', 10)"));
            Reservations reservations = app.getBean(Reservations.class);

            WriteOutcome first = reservations.reserve("A-1", 1, 0);
            WriteOutcome second = reservations.reserve("A-1", 1, 0);
            long older = ((WriteOutcome.Applied) first).offeredToken();
            long newer = ((WriteOutcome.Applied) second).offeredToken();
            assertThat(newer).isGreaterThan(older);

            assertThat(reservations.reserveUnder("A-1", 1, older))
                    .isEqualTo(new WriteOutcome.Rejected(newer, older));
            assertThat(app.getBean("fencingHealthIndicator", HealthIndicator.class).health().getStatus())
                    .isEqualTo(Status.UP);
            MeterRegistry meters = app.getBean(MeterRegistry.class);
            assertThat(meters.get("fencing.jdbc.writes").tag("outcome", "rejected").counter().count())
                    .isEqualTo(1);

            // the scheduled job ran once at start, under its lock's token; the one instance leads the election
            Jdbi jdbi = app.getBean(Jdbi.class);
            await().atMost(Duration.ofSeconds(30))
                    .until(() -> jdbi.withHandle(h -> h.createQuery(
                                            "SELECT runs FROM audit WHERE name = 'stock' AND last_fence_token > 0")
                                    .mapTo(Integer.class)
                                    .findOne()
                                    .orElse(0))
                            == 1);
            FencedElectionParticipant participant = app.getBean(FencedElectionParticipant.class);
            await().atMost(Duration.ofSeconds(30)).until(participant::isLeader);
            await().atMost(Duration.ofSeconds(30)).until(() -> app.getBean(ShopLeader.class).term() > 0);
            assertThat(app.getBean(ShopLeader.class).term())
                    .isEqualTo(participant.leadership().orElseThrow().token());
        }
    }
}
