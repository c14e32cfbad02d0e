package dev.fencing.redis.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fencing.FencePolicy;
import dev.fencing.redis.FencedRedis;
import dev.fencing.redis.FencedRedisWriteException;
import dev.fencing.redis.WriteOutcome;
import dev.fencing.testsupport.EmbeddedRedisServer;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.event.command.CommandListener;
import io.lettuce.core.event.command.CommandStartedEvent;
import io.lettuce.core.protocol.CommandType;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The EVAL that follows a NOSCRIPT is handed to Lettuce from the EVALSHA's callback, which runs on the connection's
 * event loop, unless the reply came before the sending thread attached the callback: then it runs on the sending
 * thread, and another thread can hand over a write between the check that nothing was sent after the EVALSHA and
 * the EVAL. Held here: the sending thread waits after its EVALSHA until the NOSCRIPT has come, and a command listener
 * stops the EVAL at its hand-over until a write sent after it has been handed over too, or its sender waits in the
 * writer.
 */
class EvalHandOverIT {

    @Test
    void aWriteSentWhileTheEvalAfterNoscriptIsHandedOverOffTheEventLoopRunsAfterIt() throws Exception {
        try (EmbeddedRedisServer server = EmbeddedRedisServer.builder().build()) {
            AtomicBoolean holdEval = new AtomicBoolean();
            CountDownLatch evalHeld = new CountDownLatch(1);
            CountDownLatch releaseEval = new CountDownLatch(1);
            AtomicBoolean setHandedOver = new AtomicBoolean();
            RedisClient client = RedisClient.create(server.uri());
            client.addListener(new CommandListener() {
                @Override
                public void commandStarted(CommandStartedEvent event) {
                    if (!holdEval.get()) {
                        return;
                    }
                    if (event.getCommand().getType() == CommandType.EVAL) {
                        holdTheEval(evalHeld, releaseEval, 30);
                    } else if (event.getCommand().getType() == CommandType.EVALSHA && evalHeld.getCount() == 0) {
                        setHandedOver.set(true);
                    }
                }
            });
            // the sending thread of the delete waits after its EVALSHA until the reply (NOSCRIPT) has come
            AtomicReference<Thread> slowSender = new AtomicReference<>();
            try (StatefulRedisConnection<String, String> connection = client.connect()) {
                String key = "{hand-over}:k";
                AsyncFencedRedis writer =
                        writerWithOnlyTheSetScriptLoaded(connection, Duration.ofSeconds(30), slowSender, key);
                DeleteThenSet sent = sendDeleteThenSet(writer, key, slowSender, holdEval, evalHeld);
                // the set is handed over while the EVAL is held, or its sender waits in the writer for the EVAL
                await().atMost(Duration.ofSeconds(10))
                        .until(() -> setHandedOver.get() || waitsInTheWriter(sent.setter()));
                releaseEval.countDown();

                assertThat(isApplied(sent.delete())).isTrue();
                assertThat(isApplied(sent.set())).isTrue();
                // sent delete, then set, under one token: the set's value stays
                assertThat(connection.sync().get(key)).isEqualTo("b");
                assertThat(connection.sync().get(FencedRedis.tokenKey(key))).isEqualTo("6");
            } finally {
                releaseEval.countDown();
                client.shutdown();
            }
        }
    }

    /**
     * A command listener that blocks in {@code commandStarted} of the EVAL after NOSCRIPT (or waits there for a write
     * of the same writer: for good) holds the hand-over; a write another thread sends meanwhile waits for it the
     * command timeout at most, then fails NOT sent, instead of hanging its sender.
     */
    @Test
    void aWriteWaitingForAnEvalHeldByABlockingCommandListenerFailsNotSentAfterTheTimeout() throws Exception {
        try (EmbeddedRedisServer server = EmbeddedRedisServer.builder().build()) {
            AtomicBoolean holdEval = new AtomicBoolean();
            CountDownLatch evalHeld = new CountDownLatch(1);
            CountDownLatch releaseEval = new CountDownLatch(1);
            RedisClient client = RedisClient.create(server.uri());
            client.addListener(new CommandListener() {
                @Override
                public void commandStarted(CommandStartedEvent event) {
                    if (holdEval.get() && event.getCommand().getType() == CommandType.EVAL) {
                        holdTheEval(evalHeld, releaseEval, 60);
                    }
                }
            });
            AtomicReference<Thread> slowSender = new AtomicReference<>();
            try (StatefulRedisConnection<String, String> connection = client.connect()) {
                String key = "{blocking-listener}:k";
                AsyncFencedRedis writer =
                        writerWithOnlyTheSetScriptLoaded(connection, Duration.ofMillis(500), slowSender, key);
                DeleteThenSet sent = sendDeleteThenSet(writer, key, slowSender, holdEval, evalHeld);

                // the set's sender is back while the EVAL is still held, its write failed, not sent
                assertThatThrownBy(() -> sent.set()
                                .get(10, TimeUnit.SECONDS)
                                .toCompletableFuture()
                                .get(10, TimeUnit.SECONDS))
                        .isInstanceOf(ExecutionException.class)
                        .cause()
                        .isInstanceOf(FencedRedisWriteException.class)
                        .hasMessageContaining("SET of Redis key " + key)
                        .hasMessageContaining("NOT sent");
                assertThat(evalHeld.getCount()).isZero();
                assertThat(releaseEval.getCount()).isOne();
                releaseEval.countDown();
                assertThat(isApplied(sent.delete())).isTrue();
                // the delete applied; the set, never sent, wrote nothing
                assertThat(connection.sync().get(key)).isNull();
                assertThat(connection.sync().get(FencedRedis.tokenKey(key))).isEqualTo("6");
            } finally {
                releaseEval.countDown();
                client.shutdown();
            }
        }
    }

    /**
     * A write a command listener sends from the {@code commandStarted} of the EVAL after NOSCRIPT, on the handing
     * thread, does not wait for that hand-over (it would wait for itself): Lettuce calls the listener before it
     * writes the EVAL, so the listener's write runs first.
     */
    @Test
    void aWriteAListenerSendsFromTheEvalsCommandStartedRunsBeforeTheEval() throws Exception {
        try (EmbeddedRedisServer server = EmbeddedRedisServer.builder().build()) {
            AtomicReference<AsyncFencedRedis> writer = new AtomicReference<>();
            AtomicReference<CompletionStage<WriteOutcome>> fromListener = new AtomicReference<>();
            String key = "{listener-write}:k";
            RedisClient client = RedisClient.create(server.uri());
            client.addListener(new CommandListener() {
                @Override
                public void commandStarted(CommandStartedEvent event) {
                    if (event.getCommand().getType() == CommandType.EVAL && fromListener.get() == null) {
                        fromListener.set(writer.get().trySet(key, "b", 6));
                    }
                }
            });
            try (StatefulRedisConnection<String, String> connection = client.connect()) {
                writer.set(new AsyncFencedRedis(
                        connection.async(),
                        FencePolicy.MONOTONIC,
                        new FencedKeys(false, Integer.MAX_VALUE, Integer.MAX_VALUE),
                        0,
                        Duration.ZERO,
                        16,
                        connection::isMulti,
                        Duration.ofSeconds(30)));
                assertThat(writer.get()
                                .trySet(key, "a", 6)
                                .get(10, TimeUnit.SECONDS)
                                .isApplied())
                        .isTrue();
                connection.sync().scriptFlush();
                assertThat(writer.get()
                                .trySet(key, "a", 6)
                                .get(10, TimeUnit.SECONDS)
                                .isApplied())
                        .isTrue();

                // the delete is answered NOSCRIPT with nothing sent behind it: sent again as EVAL
                WriteOutcome deleted = writer.get().tryDelete(key, 6).get(10, TimeUnit.SECONDS);
                assertThat(deleted.isApplied()).isTrue();
                assertThat(fromListener
                                .get()
                                .toCompletableFuture()
                                .get(10, TimeUnit.SECONDS)
                                .isApplied())
                        .isTrue();
                // the listener's set ran first, then the delete
                assertThat(connection.sync().get(key)).isNull();
            } finally {
                client.shutdown();
            }
        }
    }

    /**
     * A writer on {@code connection} with the given command timeout whose sending thread, when it is
     * {@code slowSender}, waits after sending until the reply has come; it has set {@code key} to "a" under token 6,
     * then again after the scripts were flushed, so that Redis has the set script but not the delete script.
     */
    private static AsyncFencedRedis writerWithOnlyTheSetScriptLoaded(
            StatefulRedisConnection<String, String> connection,
            Duration commandTimeout,
            AtomicReference<Thread> slowSender,
            String key)
            throws Exception {
        FencedKeys keys = new FencedKeys(false, Integer.MAX_VALUE, Integer.MAX_VALUE);
        AsyncFencedRedis writer = new AsyncFencedRedis(
                connection.async(),
                FencePolicy.MONOTONIC,
                keys,
                0,
                Duration.ZERO,
                16,
                connection::isMulti,
                commandTimeout,
                (CompletionStage<?> sending) -> {
                    if (Thread.currentThread() == slowSender.get()) {
                        await().atMost(Duration.ofSeconds(10))
                                .until(() -> sending.toCompletableFuture().isDone());
                    }
                });
        assertThat(writer.trySet(key, "a", 6).get(10, TimeUnit.SECONDS).isApplied())
                .isTrue();
        connection.sync().scriptFlush();
        // Redis has the set script again, not the delete script
        assertThat(writer.trySet(key, "a", 6).get(10, TimeUnit.SECONDS).isApplied())
                .isTrue();
        return writer;
    }

    /** Tells that the EVAL is held, then holds it until released, for {@code seconds} at most. */
    private static void holdTheEval(CountDownLatch evalHeld, CountDownLatch releaseEval, long seconds) {
        evalHeld.countDown();
        try {
            releaseEval.await(seconds, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Whether the write a sender has handed over was applied, waiting 10 s for each. */
    private static boolean isApplied(CompletableFuture<CompletionStage<WriteOutcome>> handedOver) throws Exception {
        return handedOver
                .get(10, TimeUnit.SECONDS)
                .toCompletableFuture()
                .get(10, TimeUnit.SECONDS)
                .isApplied();
    }

    /** The delete and the set of {@code key} under token 6, each handed over by a thread of its own. */
    private record DeleteThenSet(
            CompletableFuture<CompletionStage<WriteOutcome>> delete,
            CompletableFuture<CompletionStage<WriteOutcome>> set,
            Thread setter) {}

    /**
     * Has the listener hold the EVAL from now on, starts the delete of {@code key} on the slow sender, waits until its
     * EVAL after NOSCRIPT is held, then starts the set of "b".
     */
    private static DeleteThenSet sendDeleteThenSet(
            AsyncFencedRedis writer,
            String key,
            AtomicReference<Thread> slowSender,
            AtomicBoolean holdEval,
            CountDownLatch evalHeld)
            throws InterruptedException {
        holdEval.set(true);
        CompletableFuture<CompletionStage<WriteOutcome>> delete = new CompletableFuture<>();
        Thread deleter = new Thread(() -> delete.complete(writer.tryDelete(key, 6)));
        slowSender.set(deleter);
        deleter.start();
        assertThat(evalHeld.await(10, TimeUnit.SECONDS)).isTrue();
        CompletableFuture<CompletionStage<WriteOutcome>> set = new CompletableFuture<>();
        Thread setter = new Thread(() -> set.complete(writer.trySet(key, "b", 6)));
        setter.start();
        return new DeleteThenSet(delete, set, setter);
    }

    private static boolean waitsInTheWriter(Thread thread) {
        return (thread.getState() == Thread.State.WAITING || thread.getState() == Thread.State.TIMED_WAITING)
                && Arrays.stream(thread.getStackTrace())
                        .anyMatch(frame -> frame.getClassName().equals(AsyncFencedRedis.class.getName()));
    }
}
