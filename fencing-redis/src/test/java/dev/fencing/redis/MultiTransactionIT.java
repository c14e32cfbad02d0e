package dev.fencing.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.FencePolicy;
import dev.fencing.testsupport.EmbeddedRedisServer;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.TransactionResult;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A fenced write on a connection inside the caller's {@code MULTI}. Redis would only queue its script: a blocking
 * write would wait for an outcome that comes at {@code EXEC}, report it unknown at its timeout, and then apply at
 * {@code EXEC}; and a script Redis no longer had would be sent again as {@code EVAL} after the transaction. The
 * writer refuses it before sending anything, and the caller's transaction goes on without it.
 */
class MultiTransactionIT {
    private RedisFixture redis;
    private RedisFixture observer; // a connection of its own: the fixture's is inside MULTI

    @BeforeEach
    void connect() {
        redis = new RedisFixture();
        observer = new RedisFixture();
        // without the refusal, a blocking write inside MULTI would wait this long for its outcome
        redis.connection.setTimeout(Duration.ofSeconds(2));
    }

    @AfterEach
    void close() {
        redis.close();
        observer.close();
    }

    @Test
    void aFencedWriteInsideTheCallersMultiIsRefusedBeforeAnythingIsSentAndTheTransactionGoesOnWithoutIt() {
        FencedRedis fenced = redis.fenced(FencePolicy.STRICT);
        String key = redis.key("order");
        String plainKey = redis.key("note");
        RedisCommands<String, String> commands = redis.connection.sync();

        assertThat(commands.multi()).isEqualTo("OK");
        TransactionResult result;
        try {
            assertThatThrownBy(() -> fenced.set(key, "by-7", 7))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("fenced SET of Redis key " + key)
                    .hasMessageContaining("inside MULTI");
            assertThatThrownBy(() -> fenced.async()
                            .tryEval(
                                    FencedScript.of("redis.call('SET', KEYS[1], ARGV[1])"),
                                    List.of(key),
                                    List.of("by-7"),
                                    7))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("inside MULTI");
            commands.set(plainKey, "queued"); // the caller's own command is queued as usual
        } finally {
            result = commands.exec();
        }

        assertThat(result.wasDiscarded()).isFalse();
        assertThat(result).as("what EXEC ran: the caller's SET only").containsExactly("OK");
        assertThat(observer.plain.get(plainKey)).isEqualTo("queued");
        assertThat(observer.plain.get(key)).as("the refused fenced write").isNull();
        assertThat(observer.storedToken(key)).isZero();

        // after EXEC the connection is out of the transaction, and the same write goes through
        assertThat(fenced.trySet(key, "by-7", 7)).isEqualTo(new WriteOutcome.Applied(7, 0, null));
        assertThat(observer.plain.get(key)).isEqualTo("by-7");
    }

    /**
     * Writes pipelined before the caller's {@code MULTI}, answered {@code NOSCRIPT} once the connection is inside it
     * (Redis had lost its scripts): whatever the writer sends from their callbacks (the {@code EVAL} of the last, the
     * {@code SCRIPT LOAD} of one that may not be sent again) would be queued in the caller's transaction, run at its
     * {@code EXEC} and show among its results. Neither is sent: both writes fail, not applied.
     */
    @Test
    void writesAnsweredNoscriptInsideTheCallersMultiSendNothingIntoItsTransaction() throws Exception {
        try (EmbeddedRedisServer server = EmbeddedRedisServer.builder().build();
                RedisFixture own = new RedisFixture(server);
                RedisFixture watcher = new RedisFixture(server)) {
            FencedRedis fenced = own.fenced(FencePolicy.MONOTONIC);
            String first = own.key("first");
            String second = own.key("second");
            String plainKey = own.key("note");
            RedisAsyncCommands<String, String> commands = own.connection.async();
            own.plain.scriptFlush();

            own.connection.setAutoFlushCommands(false);
            CompletableFuture<WriteOutcome> firstWrite =
                    fenced.async().trySet(first, "v", 5).toCompletableFuture();
            CompletableFuture<WriteOutcome> secondWrite =
                    fenced.async().trySet(second, "v", 5).toCompletableFuture();
            RedisFuture<String> multi = commands.multi();
            RedisFuture<String> queued = commands.set(plainKey, "queued");
            own.connection.setAutoFlushCommands(true);
            own.connection.flushCommands();
            // MULTI's reply comes after both NOSCRIPTs: their callbacks have run
            assertThat(multi.get(10, TimeUnit.SECONDS)).isEqualTo("OK");
            TransactionResult result = commands.exec().get(10, TimeUnit.SECONDS);

            assertThat(result).as("what EXEC ran: the caller's SET only").containsExactly("OK");
            assertThat(queued.get(10, TimeUnit.SECONDS)).isEqualTo("OK");
            for (CompletableFuture<WriteOutcome> write : List.of(firstWrite, secondWrite)) {
                assertThatThrownBy(() -> write.get(10, TimeUnit.SECONDS))
                        .cause()
                        .isInstanceOf(ScriptCacheLostException.class)
                        .hasMessageContaining("NOT applied")
                        .hasMessageContaining("inside MULTI");
            }
            assertThat(watcher.plain.get(first)).isNull();
            assertThat(watcher.plain.get(second)).isNull();
        }
    }
}
