package dev.fencing.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.FencePolicy;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.protocol.CommandType;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * How a failed asynchronous write reaches its caller: always, and always in one shape. The EVAL that follows a
 * NOSCRIPT is sent from the EVALSHA's callback, so a failure to send it (here a command listener that throws,
 * as a client shutting down does) must still complete the caller's stage instead of vanishing there.
 */
class AsyncFailureShapeIT {
    private final RedisFixture redis = new RedisFixture();

    @AfterEach
    void close() {
        redis.close();
    }

    @Test
    void anEvalAfterNoScriptThatCannotBeSentFailsTheWriteInsteadOfLeavingItUnanswered() {
        RedisClient client = RedisFixture.clientRefusing(redis.uri, CommandType.EVAL);
        String key = redis.key("eval-refused");
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            FencedRedis fenced = FencedRedis.builder(connection)
                    .policy(FencePolicy.MONOTONIC)
                    .build();
            redis.plain.scriptFlush(); // the EVALSHA gets NOSCRIPT, so the write needs the EVAL

            CompletableFuture<WriteOutcome> write =
                    fenced.async().trySet(key, "v", 3).toCompletableFuture();

            assertThat(write)
                    .failsWithin(Duration.ofSeconds(10))
                    .withThrowableThat()
                    .havingRootCause()
                    .isInstanceOf(IllegalStateException.class)
                    .withMessage("this listener refuses EVAL");
            assertThat(write.handle((outcome, failure) -> failure).join())
                    .isInstanceOf(CompletionException.class)
                    .cause()
                    .isInstanceOf(FencedRedisWriteException.class)
                    .hasMessageContaining(key);
        } finally {
            client.shutdown();
        }
        assertThat(redis.plain.get(key)).as("the value, never sent").isNull();
    }

    @Test
    void anEvalshaThatCannotBeSentFailsTheWriteNamingItInsteadOfThrowingTheListenersException() {
        RedisClient client = RedisFixture.clientRefusing(redis.uri, CommandType.EVALSHA);
        String key = redis.key("evalsha-refused");
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            FencedRedis fenced = FencedRedis.builder(connection)
                    .policy(FencePolicy.MONOTONIC)
                    .build();

            CompletableFuture<WriteOutcome> write =
                    fenced.async().trySet(key, "v", 3).toCompletableFuture();

            assertThat(write.handle((outcome, failure) -> failure).join())
                    .isInstanceOf(CompletionException.class)
                    .cause()
                    .isInstanceOf(FencedRedisWriteException.class)
                    .hasMessageContaining(key)
                    .hasMessageContaining("under token 3")
                    .hasRootCauseMessage("this listener refuses EVALSHA");
        } finally {
            client.shutdown();
        }
        assertThat(redis.plain.get(key)).as("the value, never sent").isNull();
    }

    @Test
    void aCallbackSeesTheWriteExceptionInsideACompletionExceptionAsFromEveryOtherStage() {
        FencedRedis fenced = redis.fenced(FencePolicy.MONOTONIC);
        String key = redis.key("shape");
        redis.plain.set(FencedRedis.tokenKey(key), "0007"); // not a token as the library writes one

        Throwable seen = fenced.async()
                .trySet(key, "v", 9)
                .handle((outcome, failure) -> failure)
                .toCompletableFuture()
                .join();

        assertThat(seen).isInstanceOf(CompletionException.class).cause().isInstanceOf(FencedRedisWriteException.class);
        assertThat(redis.plain.get(key)).isNull();
    }
}
