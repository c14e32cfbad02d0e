package dev.fencing.redis.internal;

import dev.fencing.FencePolicy;
import dev.fencing.FenceTokens;
import dev.fencing.redis.FencedRedisAsync;
import dev.fencing.redis.FencedRedisWriteException;
import dev.fencing.redis.FencedScript;
import dev.fencing.redis.FencingRedisException;
import dev.fencing.redis.WriteOutcome;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.protocol.CommandType;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The fenced writes: checks input, sends the script (EVALSHA, EVAL on NOSCRIPT), reads its reply. */
public final class AsyncFencedRedis implements FencedRedisAsync {
    private static final Logger LOG = LoggerFactory.getLogger(AsyncFencedRedis.class);
    private static final Duration MAX_TTL = Duration.ofDays(365 * 100);
    /** Where the library's own scripts take the policy: {@code ARGV[2]}, after the token. */
    private static final int POLICY_ARGUMENT = 1;

    private final RedisClusterAsyncCommands<String, String> commands;
    private final String policyArgument;
    private final FencedKeys keys;
    private final Map<String, LuaScripts.Script> userScripts = new ConcurrentHashMap<>();
    private final int waitReplicas;
    private final long waitMillis;

    public AsyncFencedRedis(
            RedisClusterAsyncCommands<String, String> commands,
            FencePolicy policy,
            FencedKeys keys,
            int waitReplicas,
            Duration waitTimeout) {
        this.commands = Objects.requireNonNull(commands, "commands");
        this.policyArgument = policy == FencePolicy.STRICT ? "S" : "M";
        this.keys = Objects.requireNonNull(keys, "keys");
        this.waitReplicas = waitReplicas;
        this.waitMillis = waitTimeout.toMillis();
    }

    @Override
    public CompletableFuture<WriteOutcome> trySet(String key, String value, long token) {
        return set("SET", key, value, "", token);
    }

    @Override
    public CompletableFuture<WriteOutcome> trySet(String key, String value, Duration ttl, long token) {
        Objects.requireNonNull(ttl, "ttl");
        // a century: Duration.toMillis overflows for the largest durations, and Redis refuses PX near 2^63 ms
        if (ttl.isNegative() || ttl.compareTo(Duration.ofMillis(1)) < 0 || ttl.compareTo(MAX_TTL) > 0) {
            throw new IllegalArgumentException(
                    "time to live for Redis key '" + key + "' must be between 1 ms and " + MAX_TTL + ", got " + ttl);
        }
        return set("SET PX", key, value, Long.toString(ttl.toMillis()), token);
    }

    private CompletableFuture<WriteOutcome> set(String op, String key, String value, String ttlMillis, long token) {
        String tokenKey = keys.check(key);
        keys.checkValue(key, value);
        checkToken(key, token);
        return send(op, key, token, LuaScripts.SET, new String[] {key, tokenKey}, args(token, value, ttlMillis));
    }

    @Override
    public CompletableFuture<WriteOutcome> tryHset(String key, Map<String, String> fields, long token) {
        String tokenKey = keys.check(key);
        keys.checkFields(key, fields);
        checkToken(key, token);
        String[] args = new String[2 + fields.size() * 2];
        int i = 2;
        for (Map.Entry<String, String> field : fields.entrySet()) {
            args[i++] = field.getKey();
            args[i++] = field.getValue();
        }
        args[0] = Long.toString(token);
        args[1] = policyArgument;
        return send("HSET", key, token, LuaScripts.HSET, new String[] {key, tokenKey}, args);
    }

    @Override
    public CompletableFuture<WriteOutcome> tryDelete(String key, long token) {
        String tokenKey = keys.check(key);
        checkToken(key, token);
        return send("DEL", key, token, LuaScripts.DELETE, new String[] {key, tokenKey}, args(token));
    }

    @Override
    public CompletableFuture<WriteOutcome> tryIncrementBy(String key, long delta, long minimum, long token) {
        String tokenKey = keys.check(key);
        FencedKeys.checkExact(key, "delta", delta);
        FencedKeys.checkExact(key, "minimum", minimum);
        checkToken(key, token);
        return send(
                "INCRBY",
                key,
                token,
                LuaScripts.INCREMENT,
                new String[] {key, tokenKey},
                args(token, Long.toString(delta), Long.toString(minimum)));
    }

    @Override
    public CompletableFuture<WriteOutcome> tryDecrementBy(String key, long amount, long token) {
        if (amount < 0) {
            throw new IllegalArgumentException(
                    "amount to take from Redis key '" + key + "' must be >= 0, got " + amount);
        }
        return tryIncrementBy(key, -amount, 0, token);
    }

    @Override
    public CompletableFuture<WriteOutcome> tryEval(
            FencedScript script, List<String> scriptKeys, List<String> args, long token) {
        Objects.requireNonNull(script, "script");
        Objects.requireNonNull(args, "args");
        String tokenKey = keys.checkScriptKeys(scriptKeys);
        String key = scriptKeys.get(0);
        for (String arg : args) { // List.of(...).contains(null) throws
            if (arg == null) {
                throw new IllegalArgumentException("a fenced script's arguments must not contain null: " + args);
            }
        }
        checkToken(key, token);
        // the fence's own key and arguments go last, so that the body's KEYS[i] and ARGV[i] are its own
        String[] allKeys = scriptKeys.toArray(new String[scriptKeys.size() + 1]);
        allKeys[scriptKeys.size()] = tokenKey;
        String[] allArgs = args.toArray(new String[args.size() + 2]);
        allArgs[args.size()] = Long.toString(token);
        allArgs[args.size() + 1] = policyArgument;
        LuaScripts.Script lua = userScripts.computeIfAbsent(script.body(), LuaScripts::userScript);
        return send("EVAL", key, token, lua, allKeys, allArgs, allArgs.length - 1);
    }

    private String[] args(long token, String... rest) {
        String[] args = new String[2 + rest.length];
        args[0] = Long.toString(token);
        args[1] = policyArgument;
        System.arraycopy(rest, 0, args, 2, rest.length);
        return args;
    }

    private static void checkToken(String key, long token) {
        FenceTokens.requirePositive(token, "Redis key " + key);
    }

    /** Sends a library script, whose policy is its second argument. */
    private CompletableFuture<WriteOutcome> send(
            String op, String key, long token, LuaScripts.Script script, String[] scriptKeys, String[] args) {
        return send(op, key, token, script, scriptKeys, args, POLICY_ARGUMENT);
    }

    private CompletableFuture<WriteOutcome> send(
            String op,
            String key,
            long token,
            LuaScripts.Script script,
            String[] scriptKeys,
            String[] args,
            int policyAt) {
        ScriptCall evalsha = ScriptCall.evalsha(script, scriptKeys, args, policyAt);
        CompletableFuture<List<Object>> reply = commands.dispatch(CommandType.EVALSHA, evalsha.output(), evalsha)
                .toCompletableFuture()
                .exceptionallyCompose(failure -> {
                    if (!(unwrap(failure) instanceof RedisNoScriptException)) {
                        return CompletableFuture.failedFuture(failure);
                    }
                    ScriptCall eval = ScriptCall.eval(script, evalsha);
                    return commands.dispatch(CommandType.EVAL, eval.output(), eval)
                            .toCompletableFuture();
                });
        CompletableFuture<WriteOutcome> outcome = reply.handle((list, failure) -> {
            if (failure != null) {
                throw new CompletionException(failed(op, key, token, unwrap(failure)));
            }
            WriteOutcome read = Replies.outcome(op, key, token, list);
            if (read instanceof WriteOutcome.Rejected rejected) {
                LOG.debug(
                        "stale fence token refused: {} of Redis key {} under token {}, stored token {}",
                        op,
                        key,
                        token,
                        rejected.storedToken());
            }
            return read;
        });
        if (waitReplicas == 0) {
            return outcome;
        }
        return outcome.thenCompose(read -> read instanceof WriteOutcome.Applied applied
                ? commands.waitForReplication(waitReplicas, waitMillis)
                        .toCompletableFuture()
                        .handle((replicas, failure) -> {
                            if (failure != null) {
                                throw new CompletionException(new FencedRedisWriteException(
                                        "fenced " + op + " of Redis key " + key + " under token " + token
                                                + " was applied, but WAIT for " + waitReplicas + " replicas failed: "
                                                + unwrap(failure),
                                        key,
                                        token,
                                        unwrap(failure)));
                            }
                            return (WriteOutcome) new WriteOutcome.Applied(
                                    applied.offeredToken(),
                                    applied.previousToken(),
                                    applied.reply(),
                                    replicas.intValue());
                        })
                : CompletableFuture.completedFuture(read));
    }

    static FencingRedisException failed(String op, String key, long token, Throwable failure) {
        if (failure instanceof FencingRedisException fencing) {
            return fencing;
        }
        String what = "fenced " + op + " of Redis key " + key + " under token " + token;
        if (failure instanceof RedisCommandExecutionException && !(failure instanceof RedisCommandTimeoutException)) {
            // an error reply: the script checks before it writes, or Redis refused the script as a whole
            return new FencedRedisWriteException(what + " failed: " + failure.getMessage(), key, token, failure);
        }
        return new FencedRedisWriteException(
                what + " failed, and whether it applied is unknown: " + failure, key, token, failure);
    }

    static Throwable unwrap(Throwable failure) {
        Throwable cause = failure;
        while ((cause instanceof CompletionException || cause instanceof ExecutionException)
                && cause.getCause() != null) {
            cause = cause.getCause();
        }
        return cause;
    }
}
