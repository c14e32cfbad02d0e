package dev.fencing.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fencing.FencePolicy;
import dev.fencing.testsupport.EmbeddedRedisServer;
import dev.fencing.testsupport.TcpRelay;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.event.command.CommandListener;
import io.lettuce.core.event.command.CommandStartedEvent;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Lettuce's {@code autoReconnect} (its default) writes a command again after a reconnect when its reply never
 * came. A {@link TcpRelay} between the client and a real Redis loses one reply (or one request) on purpose: the
 * relay holds back what the server sends, the test waits until Redis has run the write, and the relay drops
 * the connection. The plain {@code DECRBY} shows that Lettuce does send it again (stock taken twice); the
 * fenced writes show that the fence runs a call sent again only when the stored token proves its first run did
 * not apply.
 */
class ResentWriteIT {
    private static final Duration CONDITION = Duration.ofSeconds(20);

    private static EmbeddedRedisServer server;
    private static TcpRelay relay;
    private static RedisFixture direct;
    private static RedisClient client;
    private static StatefulRedisConnection<String, String> throughRelay;

    @BeforeAll
    static void start() {
        server = EmbeddedRedisServer.builder().build();
        relay = TcpRelay.to(server.port());
        direct = new RedisFixture(server);
        client = RedisClient.create("redis://127.0.0.1:" + relay.port());
        throughRelay = client.connect();
    }

    @AfterAll
    static void stop() {
        throughRelay.close();
        client.shutdown();
        direct.close();
        relay.close();
        server.close();
    }

    /**
     * A round trip through the relay before anything is held back: Lettuce's handshake after the last test's
     * dropped connection must not be the reply that the relay holds.
     */
    @BeforeEach
    void connected() {
        assertThat(throughRelay.sync().ping()).isEqualTo("PONG");
    }

    /** A test that failed half way leaves no held bytes behind for the next. */
    @AfterEach
    void cleanLink() {
        relay.dropConnections();
    }

    @Test
    void aPlainDecrbyWhoseReplyWasLostIsTakenTwice() {
        String stock = direct.key("plain-stock");
        direct.plain.set(stock, "10");

        relay.holdBack();
        CompletableFuture<Long> decrement =
                throughRelay.async().decrby(stock, 1).toCompletableFuture();
        awaitValue(stock, "9");
        relay.dropConnections();

        assertThat(decrement.join()).isEqualTo(8);
        assertThat(direct.plain.get(stock)).isEqualTo("8");
    }

    @Test
    void aGuardedDecrementWhoseReplyWasLostIsNotTakenTwice() {
        FencedRedis fenced = fenced(FencePolicy.MONOTONIC);
        String stock = direct.key("fenced-stock");
        assertThat(fenced.incrementBy(stock, 10, 0, 3)).isEqualTo(10);

        relay.holdBack();
        CompletableFuture<WriteOutcome> decrement =
                fenced.async().tryDecrementBy(stock, 1, 3).toCompletableFuture();
        awaitValue(stock, "9");
        relay.dropConnections();

        assertThatThrownBy(decrement::join)
                .isInstanceOf(CompletionException.class)
                .cause()
                .isInstanceOf(FencedRedisWriteException.class)
                .hasMessageContaining(stock)
                .hasMessageContaining("sent again")
                .hasMessageContaining("the stored token is 3");
        assertThat(direct.plain.get(stock)).isEqualTo("9");
        assertThat(fenced.decrementBy(stock, 1, 3)).isEqualTo(8);
    }

    @Test
    void aStrictWriteWhoseReplyWasLostIsNotReportedAsRefusedByItsOwnFirstRun() {
        FencedRedis fenced = fenced(FencePolicy.STRICT);
        String order = direct.key("order");
        // Redis caches the script now: a NOSCRIPT held back in the relay would leave nothing to send again
        assertThat(fenced.trySet(direct.key("other-order"), "NEW", 1)).isEqualTo(new WriteOutcome.Applied(1, 0, null));

        relay.holdBack();
        CompletableFuture<WriteOutcome> write =
                fenced.async().trySet(order, "PAID", 5).toCompletableFuture();
        awaitValue(order, "PAID");
        relay.dropConnections();

        assertThatThrownBy(write::join)
                .cause()
                .isInstanceOf(FencedRedisWriteException.class)
                .hasMessageContaining(order)
                .hasMessageContaining("whether it applied is unknown");
        assertThat(direct.storedToken(order)).isEqualTo(5);
        assertThat(fenced.trySet(order, "SHIPPED", 6)).isEqualTo(new WriteOutcome.Applied(6, 5, null));
    }

    @Test
    void aUserScriptWhoseReplyWasLostDoesNotRunItsBodyTwice() {
        FencedRedis fenced = fenced(FencePolicy.MONOTONIC);
        FencedScript take = FencedScript.of("return redis.call('DECRBY', KEYS[1], ARGV[1])");
        String stock = direct.key("script-stock");
        assertThat(fenced.tryEval(take, List.of(stock), List.of("0"), 2)).isEqualTo(new WriteOutcome.Applied(2, 0, 0L));
        direct.plain.set(stock, "10");

        relay.holdBack();
        CompletableFuture<WriteOutcome> run =
                fenced.async().tryEval(take, List.of(stock), List.of("1"), 2).toCompletableFuture();
        awaitValue(stock, "9");
        relay.dropConnections();

        assertThatThrownBy(run::join)
                .cause()
                .isInstanceOf(FencedRedisWriteException.class)
                .hasMessageContaining("sent again");
        assertThat(direct.plain.get(stock)).isEqualTo("9");
    }

    /**
     * Lettuce decodes a table reply element by element as its bytes arrive, into an output it keeps for the
     * command's next sending: the first elements of a reply cut off part way (status "applied", the stored
     * token) would stand in front of the second sending's "sent again, not run", and the call would read applied
     * with the second sending's status as the body's reply.
     */
    @Test
    void aUserScriptWhoseTableReplyWasCutPartWayIsReportedUnknownNotAppliedWithAnotherReply() {
        FencedRedis fenced = fenced(FencePolicy.STRICT);
        FencedScript big = FencedScript.of("redis.call('SET', KEYS[1], 'done') return string.rep('x', 200000)");
        String key = direct.key("big-reply");
        // Redis caches the script now: a NOSCRIPT cut off in the relay would leave nothing to send again
        assertThat(fenced.tryEval(big, List.of(direct.key("other-big-reply")), List.of(), 1)
                        .isApplied())
                .isTrue();

        relay.holdBackAfter(40); // "*3\r\n:1\r\n$1\r\n0\r\n$200000\r\nxxx...": the status, the token, a little
        CompletableFuture<WriteOutcome> run =
                fenced.async().tryEval(big, List.of(key), List.of(), 7).toCompletableFuture();
        awaitValue(key, "done");
        await().atMost(CONDITION).until(() -> relay.heldBackBytes() > 100_000);
        relay.dropConnections();

        assertThatThrownBy(run::join)
                .cause()
                .isInstanceOf(FencedRedisWriteException.class)
                .hasMessageContaining(key)
                .hasMessageContaining("sent again")
                .hasMessageContaining("the stored token is 7");
        assertThat(direct.storedToken(key)).isEqualTo(7);
    }

    /**
     * The body's table holds an error element (a {@code pcall}'s error passed on), and the reply is cut off after
     * it. An error inside a table does not answer the sending: the call sent again is still marked, and a
     * monotonic body does not run a second time.
     */
    @Test
    void anErrorInsideATableReplyCutPartWayLeavesTheResentCallMarked() {
        FencedRedis fenced = fenced(FencePolicy.MONOTONIC);
        FencedScript take = FencedScript.of("redis.call('DECRBY', KEYS[1], 1)"
                + " return {redis.error_reply('BODY partial'), string.rep('x', 200000)}");
        String stock = direct.key("nested-error-stock");
        String warm = direct.key("nested-error-warm");
        direct.plain.set(warm, "100");
        // Redis caches the script now (the call itself fails with the body's error element)
        assertThatThrownBy(() -> fenced.tryEval(take, List.of(warm), List.of(), 1))
                .hasMessageContaining("BODY partial");
        direct.plain.set(stock, "10");

        relay.holdBackAfter(40); // "*3\r\n:1\r\n$1\r\n0\r\n*2\r\n-BODY partial\r\n$200000...": past the error
        CompletableFuture<WriteOutcome> run =
                fenced.async().tryEval(take, List.of(stock), List.of(), 7).toCompletableFuture();
        awaitValue(stock, "9");
        await().atMost(CONDITION).until(() -> relay.heldBackBytes() > 100_000);
        relay.dropConnections();

        assertThatThrownBy(run::join)
                .cause()
                .isInstanceOf(FencedRedisWriteException.class)
                .hasMessageContaining("sent again");
        assertThat(direct.plain.get(stock))
                .as("the guarded decrement, taken once")
                .isEqualTo("9");
    }

    @Test
    void aStrictWriteWhoseRequestNeverReachedRedisRunsWhenSentAgain() {
        FencedRedis fenced = fenced(FencePolicy.STRICT);
        String order = direct.key("unsent-order");
        assertThat(fenced.trySet(order, "NEW", 4)).isEqualTo(new WriteOutcome.Applied(4, 0, null));

        relay.holdBackRequests();
        CompletableFuture<WriteOutcome> write =
                fenced.async().trySet(order, "PAID", 7).toCompletableFuture();
        await().atMost(CONDITION).until(() -> relay.heldBackRequestBytes() > 0);
        relay.dropConnections();

        assertThat(write.join()).isEqualTo(new WriteOutcome.Applied(7, 4, null));
        assertThat(direct.plain.get(order)).isEqualTo("PAID");
        assertThat(direct.storedToken(order)).isEqualTo(7);
    }

    /**
     * A monotonic write sent again never runs, even when its first sending did not reach Redis: behind a proxy
     * that sending could still arrive after the second ran, with the token unchanged, and apply a second time.
     */
    @Test
    void aMonotonicWriteSentAgainDoesNotRunEvenIfItsFirstSendingNeverArrived() {
        FencedRedis fenced = fenced(FencePolicy.MONOTONIC);
        String stock = direct.key("unsent-stock");
        assertThat(fenced.incrementBy(stock, 10, 0, 4)).isEqualTo(10);

        relay.holdBackRequests();
        CompletableFuture<WriteOutcome> decrement =
                fenced.async().tryDecrementBy(stock, 1, 7).toCompletableFuture();
        await().atMost(CONDITION).until(() -> relay.heldBackRequestBytes() > 0);
        relay.dropConnections();

        assertThatThrownBy(decrement::join)
                .cause()
                .isInstanceOf(FencedRedisWriteException.class)
                .hasMessageContaining("may still arrive");
        assertThat(direct.plain.get(stock)).isEqualTo("10");
        assertThat(direct.storedToken(stock)).isEqualTo(4);
    }

    /**
     * Redis ran the write, then forgot its scripts (a restart that kept the data, a promoted replica; here SCRIPT
     * FLUSH): the EVALSHA sent again is answered NOSCRIPT, and the EVAL that follows carries the mark over.
     */
    @Test
    void aWriteSentAgainToAServerThatForgotItsScriptsIsStillNotRunTwice() {
        FencedRedis fenced = fenced(FencePolicy.MONOTONIC);
        String stock = direct.key("flushed-stock");
        assertThat(fenced.incrementBy(stock, 10, 0, 3)).isEqualTo(10);

        relay.holdBack();
        CompletableFuture<WriteOutcome> decrement =
                fenced.async().tryDecrementBy(stock, 1, 3).toCompletableFuture();
        awaitValue(stock, "9");
        direct.plain.scriptFlush();
        relay.dropConnections();

        assertThatThrownBy(decrement::join).cause().isInstanceOf(FencedRedisWriteException.class);
        assertThat(direct.plain.get(stock)).isEqualTo("9");
    }

    /** Rendering a command's arguments (a listener that logs them) encodes nothing, so it marks nothing. */
    @Test
    void aListenerThatLogsTheArgumentsDoesNotMakeAFirstSendingLookSentAgain() {
        RedisClient logging = RedisClient.create(server.uri());
        List<String> logged = new CopyOnWriteArrayList<>();
        logging.addListener(new CommandListener() {
            @Override
            public void commandStarted(CommandStartedEvent event) {
                logged.add(
                        event.getCommand().getType() + " " + event.getCommand().getArgs());
            }
        });
        try (StatefulRedisConnection<String, String> connection = logging.connect()) {
            FencedRedis fenced = FencedRedis.builder(connection)
                    .policy(FencePolicy.MONOTONIC)
                    .build();
            String key = direct.key("logged");
            assertThat(fenced.trySet(key, "a", 3)).isEqualTo(new WriteOutcome.Applied(3, 0, null));
            assertThat(fenced.trySet(key, "b", 3)).isEqualTo(new WriteOutcome.Applied(3, 3, null));
            assertThat(logged).anyMatch(line -> line.startsWith("EVALSHA") && line.contains(key));
        } finally {
            logging.shutdown();
        }
    }

    private static FencedRedis fenced(FencePolicy policy) {
        return FencedRedis.builder(throughRelay).policy(policy).build();
    }

    /** Waits, on a connection of its own, until Redis has run the write whose reply the relay holds. */
    private static void awaitValue(String key, String value) {
        await().atMost(CONDITION).until(() -> value.equals(direct.plain.get(key)));
    }
}
