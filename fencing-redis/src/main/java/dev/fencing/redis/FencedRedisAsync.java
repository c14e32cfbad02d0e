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
 * <p><b>Order.</b> Writes pipelined on one connection run in the order they were sent while Redis has the fence
 * scripts cached. A write answered {@code NOSCRIPT} (Redis lost its script cache: a restart, a failover to a
 * replica, {@code SCRIPT FLUSH}) is sent again as {@code EVAL} from its callback, after the writes pipelined behind
 * it have already run: two writes to one key under one token can then land in the other order (under {@link
 * dev.fencing.FencePolicy#MONOTONIC} both apply, a delete sent before a set deleting the set's value; under {@link
 * dev.fencing.FencePolicy#STRICT} the other one is the one refused). The fence itself holds: an older token never
 * overwrites a newer one. When the order of two writes to one key matters, wait for the first's outcome before
 * sending the second, or make them one {@link FencedScript}. ({@code EVALSHA} is what keeps each write small;
 * sending every write as {@code EVAL} would keep the order at the price of the whole script per write.)
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
