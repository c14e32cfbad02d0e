package dev.fencing.redis;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;

/**
 * The writes of {@link FencedRedis}, returning as soon as the script is sent: several writes in flight on
 * one connection are pipelined. Each stage completes with the {@link WriteOutcome}, or exceptionally with a
 * {@link FencingRedisException} (the cause of the {@code CompletionException} that {@code join()} throws). Bad input (a token {@code <= 0}, a malformed key or value) is refused at
 * once, by throwing, before anything is sent. Thread-safe.
 *
 * <p><b>Order.</b> Fenced writes pipelined on one writer's connection run in the order they were sent. A write
 * answered {@code NOSCRIPT} (Redis lost its script cache: a restart, a failover to a replica, {@code SCRIPT FLUSH})
 * is sent again as {@code EVAL} only when no fenced write of this writer was sent after it, and then nothing sent
 * later runs before it. When one was (on one connection it has run already; on a cluster it may have gone to
 * another node), the write is NOT applied: it completes with a {@link
 * ScriptCacheLostException}, and may be sent again: its script is loaded again before it fails, so the writes sent
 * after that find it. Sending it as {@code EVAL} then would run it after the writes
 * sent behind it (a delete sent before a set deleting the set's value, both applied). The order is kept among the
 * writes of one writer: two writers built on one connection, or plain commands sent beside them, are not ordered
 * by it. In a cluster, a write sent behind it to any node counts.
 *
 * <pre>{@code
 * List<CompletionStage<WriteOutcome>> writes = new ArrayList<>();
 * for (String sku : skus) {
 *     writes.add(redis.async().trySet("{" + sku + "}:state", "RESERVED", token));
 * }
 * }</pre>
 */
public interface FencedRedisAsync {

    /** See {@link FencedRedis#trySet(String, String, long)}. */
    CompletionStage<WriteOutcome> trySet(String key, String value, long token);

    /** See {@link FencedRedis#trySet(String, String, Duration, long)}. */
    CompletionStage<WriteOutcome> trySet(String key, String value, Duration ttl, long token);

    /** See {@link FencedRedis#tryHset}. */
    CompletionStage<WriteOutcome> tryHset(String key, Map<String, String> fields, long token);

    /** See {@link FencedRedis#tryDelete}. */
    CompletionStage<WriteOutcome> tryDelete(String key, long token);

    /** See {@link FencedRedis#tryIncrementBy}. */
    CompletionStage<WriteOutcome> tryIncrementBy(String key, long delta, long minimum, long token);

    /** See {@link FencedRedis#tryDecrementBy}. */
    CompletionStage<WriteOutcome> tryDecrementBy(String key, long amount, long token);

    /** See {@link FencedRedis#tryEval}. */
    CompletionStage<WriteOutcome> tryEval(FencedScript script, List<String> keys, List<String> args, long token);
}
