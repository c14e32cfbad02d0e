package dev.fencing.redis.internal;

import dev.fencing.FencePolicy;
import dev.fencing.redis.FencePredicateFailedException;
import dev.fencing.redis.FencedRedis;
import dev.fencing.redis.FencedRedisAsync;
import dev.fencing.redis.FencedRedisWriteException;
import dev.fencing.redis.FencedScript;
import dev.fencing.redis.FencingRedisException;
import dev.fencing.redis.StaleFenceException;
import dev.fencing.redis.WriteOutcome;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;

/** The blocking face of {@link AsyncFencedRedis}: waits for each outcome, and throws for the throwing twins. */
public final class DefaultFencedRedis implements FencedRedis {
    private final AsyncFencedRedis async;
    private final Duration timeout;
    private final FencePolicy policy;

    public DefaultFencedRedis(
            RedisClusterAsyncCommands<String, String> commands,
            Duration timeout,
            FencePolicy policy,
            FencedKeys keys,
            int waitReplicas,
            Duration waitTimeout,
            int scriptCacheSize,
            BooleanSupplier inTransaction) {
        this.timeout = Objects.requireNonNull(timeout, "timeout");
        this.async = new AsyncFencedRedis(
                commands, policy, keys, waitReplicas, waitTimeout, scriptCacheSize, inTransaction, timeout);
        this.policy = policy;
    }

    @Override
    public FencePolicy policy() {
        return policy;
    }

    @Override
    public FencedRedisAsync async() {
        return async;
    }

    @Override
    public WriteOutcome trySet(String key, String value, long token) {
        return await("SET", key, token, async.trySet(key, value, token));
    }

    @Override
    public WriteOutcome trySet(String key, String value, Duration ttl, long token) {
        return await("SET PX", key, token, async.trySet(key, value, ttl, token));
    }

    @Override
    public void set(String key, String value, long token) {
        throwUnlessApplied(key, trySet(key, value, token));
    }

    @Override
    public void set(String key, String value, Duration ttl, long token) {
        throwUnlessApplied(key, trySet(key, value, ttl, token));
    }

    @Override
    public WriteOutcome tryHset(String key, Map<String, String> fields, long token) {
        return await("HSET", key, token, async.tryHset(key, fields, token));
    }

    @Override
    public void hset(String key, Map<String, String> fields, long token) {
        throwUnlessApplied(key, tryHset(key, fields, token));
    }

    @Override
    public WriteOutcome tryDelete(String key, long token) {
        return await("DEL", key, token, async.tryDelete(key, token));
    }

    @Override
    public void delete(String key, long token) {
        throwUnlessApplied(key, tryDelete(key, token));
    }

    @Override
    public WriteOutcome tryIncrementBy(String key, long delta, long minimum, long token) {
        return await("INCRBY", key, token, async.tryIncrementBy(key, delta, minimum, token));
    }

    @Override
    public WriteOutcome tryDecrementBy(String key, long amount, long token) {
        return await("INCRBY", key, token, async.tryDecrementBy(key, amount, token));
    }

    @Override
    public long incrementBy(String key, long delta, long minimum, long token) {
        WriteOutcome outcome = tryIncrementBy(key, delta, minimum, token);
        throwUnlessApplied(key, outcome);
        return (Long) ((WriteOutcome.Applied) outcome).reply();
    }

    @Override
    public long decrementBy(String key, long amount, long token) {
        WriteOutcome outcome = tryDecrementBy(key, amount, token);
        throwUnlessApplied(key, outcome);
        return (Long) ((WriteOutcome.Applied) outcome).reply();
    }

    @Override
    public WriteOutcome tryEval(FencedScript script, List<String> keys, List<String> args, long token) {
        CompletableFuture<WriteOutcome> sent = async.tryEval(script, keys, args, token);
        return await("EVAL", keys.get(0), token, sent);
    }

    @Override
    public Object eval(FencedScript script, List<String> keys, List<String> args, long token) {
        WriteOutcome outcome = tryEval(script, keys, args, token);
        throwUnlessApplied(keys.get(0), outcome);
        return ((WriteOutcome.Applied) outcome).reply();
    }

    private void throwUnlessApplied(String key, WriteOutcome outcome) {
        if (outcome instanceof WriteOutcome.Rejected rejected) {
            throw new StaleFenceException(key, rejected.storedToken(), rejected.offeredToken(), policy);
        } else if (outcome instanceof WriteOutcome.PredicateFailed failed) {
            throw new FencePredicateFailedException(
                    key, failed.storedToken(), failed.offeredToken(), failed.currentValue());
        }
    }

    private WriteOutcome await(String op, String key, long token, CompletableFuture<WriteOutcome> sent) {
        try {
            return CommandTimeout.await(sent, timeout);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new FencedRedisWriteException(
                    "interrupted while waiting for fenced " + op + " of Redis key " + FencedKeys.shown(key)
                            + " under token " + token + "; whether it applied is unknown",
                    key,
                    token,
                    e);
        } catch (TimeoutException e) {
            throw new FencedRedisWriteException(
                    "no answer to fenced " + op + " of Redis key " + FencedKeys.shown(key) + " under token " + token
                            + " within " + timeout + "; whether it applied is unknown",
                    key,
                    token,
                    e);
        } catch (ExecutionException e) {
            FencingRedisException failure = AsyncFencedRedis.failed(op, key, token, AsyncFencedRedis.unwrap(e));
            throw failure;
        }
    }
}
