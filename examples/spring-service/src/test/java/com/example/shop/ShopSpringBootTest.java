package com.example.shop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencing.jdbc.WriteOutcome;
import dev.fencing.spring.FencedElectionParticipant;
import dev.fencing.testsupport.spring.FencingTestServers;
import dev.fencing.testsupport.spring.FencingTestServers.Server;
import java.time.Duration;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;

/**
 * The service's own Spring Boot test, as a user writes one: {@code @FencingTestServers} starts ZooKeeper and
 * PostgreSQL once and makes their addresses the service's properties (its application.properties reads them
 * from environment variables this JVM does not have). The scheduled job runs under its lock's token, the
 * instance leads the election, and a write under a token older than the row's is refused.
 */
@SpringBootTest(classes = ShopApplication.class)
@FencingTestServers({Server.ZOOKEEPER, Server.POSTGRES})
class ShopSpringBootTest {
    @Autowired
    Reservations reservations;

    @Autowired
    Jdbi jdbi;

    @Autowired
    FencedElectionParticipant participant;

    @Autowired
    ShopLeader leader;

    @Test
    void theJobTheElectionAndTheFenceWorkInTheServicesOwnTest() {
        await().atMost(Duration.ofSeconds(30))
                .until(() -> jdbi.withHandle(h -> h.createQuery(
                                        "SELECT runs FROM audit WHERE name = 'stock' AND last_fence_token > 0")
                                .mapTo(Integer.class)
                                .findOne()
                                .orElse(0))
                        >= 1);
        await().atMost(Duration.ofSeconds(30)).until(() -> participant.isLeader() && leader.term() > 0);
        assertThat(leader.term()).isEqualTo(participant.leadership().orElseThrow().token());

        jdbi.useHandle(h -> h.execute("INSERT INTO inventory (sku, stock) VALUES ('S-1', 10)"));
        long token = ((WriteOutcome.Applied) reservations.reserve("S-1", 1, 0)).offeredToken();
        assertThat(reservations.reserve("S-1", 1, 0)).isInstanceOf(WriteOutcome.Applied.class);
        assertThat(reservations.reserveUnder("S-1", 1, token)).isInstanceOf(WriteOutcome.Rejected.class);
    }
}
