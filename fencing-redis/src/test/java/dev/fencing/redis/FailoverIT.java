package dev.fencing.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencing.FencePolicy;
import dev.fencing.testsupport.EmbeddedRedisServer;
import dev.fencing.testsupport.TcpRelay;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * What a failover does to stored tokens, on a real primary P and replica R: R replicates P through a {@link
 * TcpRelay}, which the first test holds back so that the last write cannot reach R while both servers stay
 * connected (P counts R as an online replica, R keeps acknowledging the offset it has). Then P is killed
 * (SIGKILL) and R promoted ({@code REPLICAOF NO ONE}), as a failover would:
 *
 * <pre>
 *  holder A (token 5)  SET on P: Applied                               SET on R: Applied (6 is gone)
 *  holder B (token 6)              SET on P: Applied (WAIT: 0 replicas)
 *  P (primary)         token 5     token 6, held back in the link       SIGKILL
 *  R (replica)         token 5     (never gets 6)                       REPLICAOF NO ONE: token 5
 * </pre>
 *
 * The second test is the same failover after R acknowledged token 6 ({@code WAIT} said 1): A is refused.
 *
 * <p>The link is held in a relay, not by freezing R: a replica frozen with SIGSTOP still gets the write,
 * because the kernel keeps receiving P's bytes into R's socket buffer and R applies them once resumed, even
 * when P was killed before (tried with this Redis: the frozen replica came back with token 6, although
 * {@code WAIT} had reported 0). Bytes held in the relay are in no socket, so nothing can deliver them.
 *
 * <p>Writers use MONOTONIC, so that holder A, which already wrote under token 5, may write again under it:
 * that later write is refused only if the key's token has moved past 5.
 */
class FailoverIT {
    private static final Duration CONDITION = Duration.ofSeconds(20);

    @Test
    void aReplicaPromotedWithoutTheLastWriteAcceptsTheOlderTokenAndOnlyWaitToldTheWriter() {
        try (EmbeddedRedisServer primary = EmbeddedRedisServer.builder().build();
                TcpRelay link = TcpRelay.to(primary.port());
                EmbeddedRedisServer replica = replicaThrough(link);
                RedisFixture onPrimary = new RedisFixture(primary);
                RedisFixture onReplica = new RedisFixture(replica)) {
            String stock = onPrimary.key("stock");
            String order = onPrimary.key("order");
            // given: A wrote under token 5, and R has it
            awaitInSync(onPrimary, onReplica);
            FencedRedis holderA = FencedRedis.builder(onPrimary.connection)
                    .policy(FencePolicy.MONOTONIC)
                    .build();
            assertThat(holderA.trySet(stock, "by-A", 5)).isEqualTo(new WriteOutcome.Applied(5, 0, null));
            assertThat(holderA.trySet(order, "by-A", 5)).isEqualTo(new WriteOutcome.Applied(5, 0, null));
            awaitInSync(onPrimary, onReplica);
            assertThat(onReplica.plain.get(stock)).isEqualTo("by-A");
            assertThat(onReplica.storedToken(stock)).isEqualTo(5);
            assertThat(onReplica.storedToken(order)).isEqualTo(5);

            // when: B writes under token 6 on P, and nothing P sends from now on reaches R
            link.holdBack();
            FencedRedis holderB = FencedRedis.builder(onPrimary.connection)
                    .policy(FencePolicy.MONOTONIC)
                    .build();
            FencedRedis holderBWaiting = FencedRedis.builder(onPrimary.connection)
                    .policy(FencePolicy.MONOTONIC)
                    .waitForReplicas(1, Duration.ofMillis(200))
                    .build();

            // then: without WAIT the outcome says applied, and nothing about replicas
            assertThat(holderB.trySet(stock, "by-B", 6))
                    .isEqualTo(new WriteOutcome.Applied(6, 5, null, WriteOutcome.Applied.NOT_ASKED));
            // with WAIT it says that no replica has it: the writer can tell it is not durable
            assertThat(holderBWaiting.trySet(order, "by-B", 6)).isEqualTo(new WriteOutcome.Applied(6, 5, null, 0));
            // P counts R as a connected replica; the writes are on their way to R, held back in the link
            assertThat(replication(onPrimary, "connected_slaves")).isEqualTo("1");
            assertThat(link.heldBackBytes()).isPositive();
            assertThat(onPrimary.storedToken(stock)).isEqualTo(6);
            assertThat(onReplica.storedToken(stock)).isEqualTo(5);
            assertThat(onReplica.storedToken(order)).isEqualTo(5);

            // when: P dies, R is promoted
            failOver(primary, onReplica);
            FencedRedis onPromoted = FencedRedis.builder(onReplica.connection)
                    .policy(FencePolicy.MONOTONIC)
                    .build();

            // then: the token went back to 5; the fence still works from there
            assertThat(onReplica.storedToken(stock)).isEqualTo(5);
            assertThat(onPromoted.trySet(stock, "late-4", 4)).isEqualTo(new WriteOutcome.Rejected(5, 4));
            // the hazard: stale holder A's write is accepted, although B had written under 6
            assertThat(onPromoted.trySet(stock, "late-A", 5)).isEqualTo(new WriteOutcome.Applied(5, 5, null));
            assertThat(onReplica.plain.get(stock)).isEqualTo("late-A");
            // and WAIT did not prevent it either: it only told B
            assertThat(onPromoted.trySet(order, "late-A", 5)).isEqualTo(new WriteOutcome.Applied(5, 5, null));
            // a holder of token 6 or later still writes, and shuts A out again
            assertThat(onPromoted.trySet(stock, "by-B-again", 6)).isEqualTo(new WriteOutcome.Applied(6, 5, null));
            assertThat(onPromoted.trySet(stock, "late-A", 5)).isEqualTo(new WriteOutcome.Rejected(6, 5));
            assertThat(onPromoted.trySet(order, "by-C", 7)).isEqualTo(new WriteOutcome.Applied(7, 5, null));
        }
    }

    @Test
    void aReplicaThatAcknowledgedTheLastWriteRefusesTheOlderTokenOncePromotedWhileAPlainSetStillLands() {
        try (EmbeddedRedisServer primary = EmbeddedRedisServer.builder().build();
                TcpRelay link = TcpRelay.to(primary.port());
                EmbeddedRedisServer replica = replicaThrough(link);
                RedisFixture onPrimary = new RedisFixture(primary);
                RedisFixture onReplica = new RedisFixture(replica)) {
            String stock = onPrimary.key("stock");
            awaitInSync(onPrimary, onReplica);
            FencedRedis holderA = FencedRedis.builder(onPrimary.connection)
                    .policy(FencePolicy.MONOTONIC)
                    .build();
            assertThat(holderA.trySet(stock, "by-A", 5)).isEqualTo(new WriteOutcome.Applied(5, 0, null));

            // given: B's write under token 6 is acknowledged by R (the link is not held back)
            FencedRedis holderBWaiting = FencedRedis.builder(onPrimary.connection)
                    .policy(FencePolicy.MONOTONIC)
                    .waitForReplicas(1, Duration.ofSeconds(10))
                    .build();
            assertThat(holderBWaiting.trySet(stock, "by-B", 6)).isEqualTo(new WriteOutcome.Applied(6, 5, null, 1));
            assertThat(link.heldBackBytes()).isZero();

            // when: P dies, R is promoted
            failOver(primary, onReplica);
            FencedRedis onPromoted = FencedRedis.builder(onReplica.connection)
                    .policy(FencePolicy.MONOTONIC)
                    .build();

            // then: stale holder A is refused with token 6
            assertThat(onPromoted.trySet(stock, "late-A", 5)).isEqualTo(new WriteOutcome.Rejected(6, 5));
            assertThat(onReplica.plain.get(stock)).isEqualTo("by-B");
            // the same late write without the fence lands on B's value
            onReplica.plain.set(stock, "late-A");
            assertThat(onReplica.plain.get(stock)).isEqualTo("late-A");
        }
    }

    private static EmbeddedRedisServer replicaThrough(TcpRelay link) {
        return EmbeddedRedisServer.builder()
                .setting("replicaof", "127.0.0.1 " + link.port())
                .build();
    }

    /** Waits until R's link is up and R has applied everything P has sent (equal replication offsets). */
    private static void awaitInSync(RedisFixture onPrimary, RedisFixture onReplica) {
        await().atMost(CONDITION)
                .pollInterval(Duration.ofMillis(10))
                .until(() -> replication(onReplica, "master_link_status").equals("up")
                        && replication(onReplica, "slave_repl_offset")
                                .equals(replication(onPrimary, "master_repl_offset")));
    }

    /** Kills P (SIGKILL), waits until R has seen its link to P go down, and promotes R. */
    private static void failOver(EmbeddedRedisServer primary, RedisFixture onReplica) {
        primary.kill();
        await().atMost(CONDITION)
                .pollInterval(Duration.ofMillis(10))
                .until(() -> replication(onReplica, "master_link_status").equals("down"));
        onReplica.plain.replicaofNoOne();
        await().atMost(CONDITION)
                .pollInterval(Duration.ofMillis(10))
                .until(() -> onReplica.plain.role().get(0).equals("master"));
    }

    /** One field of {@code INFO replication}, for example {@code master_repl_offset}. */
    private static String replication(RedisFixture redis, String field) {
        String prefix = field + ":";
        return redis.plain
                .info("replication")
                .lines()
                .filter(line -> line.startsWith(prefix))
                .map(line -> line.substring(prefix.length()).trim())
                .findFirst()
                .orElseThrow(() -> new AssertionError("INFO replication has no " + field));
    }
}
