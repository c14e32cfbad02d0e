package dev.fencing.redis.internal;

import dev.fencing.FencePolicy;
import dev.fencing.FenceTokens;
import dev.fencing.redis.FencedRedisAsync;
import dev.fencing.redis.FencedRedisWriteException;
import dev.fencing.redis.FencedScript;
import dev.fencing.redis.FencingRedisException;
import dev.fencing.redis.ScriptCacheLostException;
import dev.fencing.redis.WriteOutcome;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.cluster.api.async.RedisAdvancedClusterAsyncCommands;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.CommandOutput;
import io.lettuce.core.output.StatusOutput;
import io.lettuce.core.protocol.CommandType;
import io.lettuce.core.protocol.ProtocolKeyword;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiFunction;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The fenced writes: checks input, sends the script (EVALSHA, EVAL on NOSCRIPT), reads its reply. */
public final class AsyncFencedRedis implements FencedRedisAsync {
    private static final Logger LOG = LoggerFactory.getLogger(AsyncFencedRedis.class);
    private static final Duration MAX_TTL = Duration.ofDays(365 * 100);

    /**
     * {@code SCRIPT}, but not Lettuce's {@link CommandType#SCRIPT}, which Lettuce counts as read-only and sends to a
     * replica when the connection reads from replicas: a script must be loaded where the writes run, on the primary.
     */
    private static final ProtocolKeyword SCRIPT = new ProtocolKeyword() {
        private final byte[] bytes = "SCRIPT".getBytes(StandardCharsets.US_ASCII);

        @Override
        public byte[] getBytes() {
            return bytes;
        }

        @Override
        public String toString() {
            return "SCRIPT";
        }
    };

    private final RedisClusterAsyncCommands<String, String> commands;
    private final char policy;
    private final FencedKeys keys;
    private final ScriptCache userScripts;
    private final int waitReplicas;
    private final long waitMillis;
    /** Whether the connection is inside the caller's MULTI now (a cluster connection never is). */
    private final BooleanSupplier inTransaction;
    /**
     * The number of the last fenced write sent (taken just before it is handed to Lettuce), or claimed by an EVAL
     * sent after a NOSCRIPT: see {@link #resendAfterNoscript}.
     */
    private final AtomicLong sent = new AtomicLong();
    /** A bit of {@link #sent}: an EVAL after NOSCRIPT is being handed to Lettuce, by {@link #handingOver}. */
    private static final long HANDING_OVER = 1L << 62;
    /** The thread handing an EVAL after NOSCRIPT to Lettuce, or null. */
    private volatile Thread handingOver;
    /** How long a write waits for that hand-over at most ({@link CommandTimeout#isNone none}: no bound). */
    private final Duration handOverTimeout;
    /** {@link #handOverTimeout} in nanoseconds (at most about 146 years), or 0 for none. */
    private final long handOverNanos;
    /** Run on the sending thread once an EVALSHA is handed to Lettuce: a test's hold. */
    private final Consumer<CompletionStage<?>> afterEvalsha;

    public AsyncFencedRedis(
            RedisClusterAsyncCommands<String, String> commands,
            FencePolicy policy,
            FencedKeys keys,
            int waitReplicas,
            Duration waitTimeout,
            int scriptCacheSize,
            BooleanSupplier inTransaction,
            Duration handOverTimeout) {
        this(
                commands,
                policy,
                keys,
                waitReplicas,
                waitTimeout,
                scriptCacheSize,
                inTransaction,
                handOverTimeout,
                sent -> {});
    }

    AsyncFencedRedis(
            RedisClusterAsyncCommands<String, String> commands,
            FencePolicy policy,
            FencedKeys keys,
            int waitReplicas,
            Duration waitTimeout,
            int scriptCacheSize,
            BooleanSupplier inTransaction,
            Duration handOverTimeout,
            Consumer<CompletionStage<?>> afterEvalsha) {
        this.afterEvalsha = afterEvalsha;
        this.handOverTimeout = Objects.requireNonNull(handOverTimeout, "handOverTimeout");
        this.handOverNanos = CommandTimeout.isNone(handOverTimeout)
                ? 0
                : handOverTimeout.compareTo(Duration.ofNanos(Long.MAX_VALUE / 2)) >= 0
                        ? Long.MAX_VALUE / 2
                        : handOverTimeout.toNanos();
        this.commands = Objects.requireNonNull(commands, "commands");
        this.inTransaction = Objects.requireNonNull(inTransaction, "inTransaction");
        this.policy = policy == FencePolicy.STRICT ? 'S' : 'M';
        this.keys = Objects.requireNonNull(keys, "keys");
        this.waitReplicas = waitReplicas;
        this.waitMillis = waitTimeout.toMillis();
        this.userScripts = new ScriptCache(scriptCacheSize);
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
            throw new IllegalArgumentException("time to live for Redis key '" + FencedKeys.shown(key)
                    + "' must be between 1 ms and " + MAX_TTL + ", got " + ttl);
        }
        return set("SET PX", key, value, Long.toString(ttl.toMillis()), token);
    }

    private CompletableFuture<WriteOutcome> set(String op, String key, String value, String ttlMillis, long token) {
        String tokenKey = keys.check(key);
        keys.checkValue(key, value);
        checkToken(key, token);
        return send(
                op,
                key,
                token,
                LuaScripts.SET,
                fenced(key, tokenKey, token, value.length() + 16).text(value).text(ttlMillis));
    }

    @Override
    public CompletableFuture<WriteOutcome> tryHset(String key, Map<String, String> fields, long token) {
        String tokenKey = keys.check(key);
        keys.checkFields(key, fields);
        checkToken(key, token);
        ScriptCall.Arguments arguments = fenced(key, tokenKey, token, 32 * fields.size());
        for (Map.Entry<String, String> field : fields.entrySet()) {
            arguments.text(field.getKey()).text(field.getValue());
        }
        return send("HSET", key, token, LuaScripts.HSET, arguments);
    }

    @Override
    public CompletableFuture<WriteOutcome> tryDelete(String key, long token) {
        String tokenKey = keys.check(key);
        checkToken(key, token);
        return send("DEL", key, token, LuaScripts.DELETE, fenced(key, tokenKey, token, 0));
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
                fenced(key, tokenKey, token, 48).number(delta).number(minimum));
    }

    @Override
    public CompletableFuture<WriteOutcome> tryDecrementBy(String key, long amount, long token) {
        if (amount < 0 || amount > FencedKeys.EXACT_LIMIT) {
            throw new IllegalArgumentException(
                    "amount to take from Redis key '" + FencedKeys.shown(key) + "' must be in 0..2^53"
                            + " (the guard's arithmetic, Lua's doubles, is exact there), got " + amount);
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
        keys.checkScriptArguments(key, args);
        checkToken(key, token);
        // the fence's own key and arguments go last, so that the body's KEYS[i] and ARGV[i] are its own
        ScriptCall.Arguments arguments = new ScriptCall.Arguments(scriptKeys.size() + 1, 64);
        for (String scriptKey : scriptKeys) {
            arguments.key(scriptKey);
        }
        arguments.key(tokenKey);
        for (String arg : args) {
            arguments.text(arg);
        }
        arguments.number(token).policy(policy);
        requireNoTransaction("EVAL", key);
        return send(
                "EVAL",
                key,
                token,
                userScripts.script(script.body()),
                arguments,
                ScriptCall::tableOutput,
                (table, failure) -> afterFence(key, token, table, failure));
    }

    /** How many user scripts are kept ready to send. */
    public int cachedScripts() {
        return userScripts.size();
    }

    /** A library script's arguments: KEYS the key and its token key, ARGV the token and the policy first. */
    private ScriptCall.Arguments fenced(String key, String tokenKey, long token, int more) {
        return new ScriptCall.Arguments(2, 2 * key.length() + more)
                .key(key)
                .key(tokenKey)
                .number(token)
                .policy(policy);
    }

    /**
     * A fenced write is one script, atomic on its own. Inside the caller's {@code MULTI} Redis only queues it: its
     * outcome comes at {@code EXEC}, which a blocking caller waiting for it never reaches (it would report the
     * outcome unknown at its timeout and the write would then apply at {@code EXEC}), and a script Redis no longer
     * has (answered {@code NOSCRIPT} at {@code EXEC}) would be sent again as {@code EVAL} after the transaction,
     * outside it. So it is refused, before anything is sent.
     */
    private void requireNoTransaction(String op, String key) {
        if (inTransaction.getAsBoolean()) {
            throw new IllegalStateException(
                    "fenced " + op + " of Redis key " + FencedKeys.shown(key) + " refused: the connection is"
                            + " inside MULTI. A fenced write is one atomic script already; send it outside MULTI/EXEC (on"
                            + " this connection after EXEC or DISCARD, or on a connection of its own)");
        }
    }

    private static void checkToken(String key, long token) {
        FenceTokens.requirePositive(token, "Redis key " + FencedKeys.shown(key));
    }

    /** Sends a library script, whose reply is a {@link FenceReply}. */
    private CompletableFuture<WriteOutcome> send(
            String op, String key, long token, LuaScripts.Script script, ScriptCall.Arguments arguments) {
        requireNoTransaction(op, key);
        return send(op, key, token, script, arguments, FenceReply::new, (reply, failure) -> failure);
    }

    /**
     * Sends a script: EVALSHA, then EVAL if Redis has not cached it. One stage between Lettuce's command and the
     * caller's outcome (this is the path a pipelined writer runs per write).
     *
     * @param output a new reader of one call's reply: a library script's {@link FenceReply}, a user script's table
     * @param told what a failure of a call is told as, given that call's reader
     */
    private <T, O extends CommandOutput<String, String, T>> CompletableFuture<WriteOutcome> send(
            String op,
            String key,
            long token,
            LuaScripts.Script script,
            ScriptCall.Arguments arguments,
            Function<ScriptCall, O> output,
            BiFunction<O, Throwable, Throwable> told) {
        ScriptCall evalsha = ScriptCall.evalsha(script, arguments);
        O evalshaOutput = output.apply(evalsha);
        CompletableFuture<WriteOutcome> outcome = new CompletableFuture<>();
        long number = nextNumber();
        if (number < 0) {
            return CompletableFuture.failedFuture(new CompletionException(new FencedRedisWriteException(
                    "fenced " + op + " of Redis key " + FencedKeys.shown(key) + " under token " + token
                            + " was NOT sent: an EVAL of this writer sent again after NOSCRIPT was still being handed"
                            + " to Lettuce after " + handOverTimeout + " (a CommandListener blocking in"
                            + " commandStarted?), and this write may only go behind it. Nothing was written; it may"
                            + " be retried",
                    key,
                    token,
                    null)));
        }
        CompletionStage<T> sending;
        try {
            sending = commands.dispatch(CommandType.EVALSHA, evalshaOutput, evalsha);
        } catch (RuntimeException e) { // a command listener, a client shutting down: fail the stage, naming the write
            complete(outcome, op, key, token, null, e);
            return outcome;
        }
        afterEvalsha.accept(sending);
        sending.whenComplete((reply, failure) -> {
            if (failure != null && unwrap(failure) instanceof RedisNoScriptException) {
                if (inTransaction.getAsBoolean()) {
                    // the caller entered MULTI after this was sent: anything sent now would join its transaction
                    outcome.completeExceptionally(new CompletionException(
                            ScriptCacheLostException.insideMulti(op, key, token, unwrap(failure))));
                    return;
                }
                if (!resendAfterNoscript(number)) {
                    load(script, arguments);
                    outcome.completeExceptionally(
                            new CompletionException(new ScriptCacheLostException(op, key, token, unwrap(failure))));
                    return;
                }
                try {
                    ScriptCall eval = ScriptCall.eval(script, evalsha);
                    O evalOutput = output.apply(eval);
                    sendEval(
                            outcome,
                            op,
                            key,
                            token,
                            () -> commands.dispatch(CommandType.EVAL, evalOutput, eval),
                            evalFailure -> told.apply(evalOutput, evalFailure));
                } catch (RuntimeException e) { // the caller's stage must complete, whatever failed before the send
                    complete(outcome, op, key, token, null, e);
                } finally {
                    handedOver();
                }
            } else {
                complete(outcome, op, key, token, reply, failure == null ? null : told.apply(evalshaOutput, failure));
            }
        });
        return waitForReplicas(op, key, token, outcome);
    }

    /**
     * Whether the write numbered {@code number}, answered NOSCRIPT, may be sent again as EVAL: only if no fenced
     * write of this writer was sent after it, for one sent after it has run already (Redis runs a connection's
     * commands in the order they arrive), and the EVAL would run after it, out of the order sent. Otherwise the
     * write fails, not applied ({@link ScriptCacheLostException}). The EVAL claims the next number, so that a write
     * sent after the check counts as sent after the EVAL, and marks the counter {@link #HANDING_OVER} until it is
     * handed to Lettuce ({@link #handedOver}): a write another thread sends meanwhile waits for that ({@link
     * #nextNumber}), so nothing sent after the check runs before the EVAL. The callback usually runs on the
     * connection's event loop, where other threads' writes queue behind it anyway; but when the reply came before the
     * sending thread attached the callback, it runs on the sending thread, off the event loop. The counter spans all
     * of this writer's writes (in a cluster, those to every node): one atomic increment per write, no lock, no extra
     * round trip.
     */
    private boolean resendAfterNoscript(long number) {
        if (!sent.compareAndSet(number, (number + 1) | HANDING_OVER)) {
            return false;
        }
        handingOver = Thread.currentThread();
        return true;
    }

    /** The EVAL claimed by {@link #resendAfterNoscript} is handed to Lettuce (or failed to be): writes may go on. */
    private void handedOver() {
        handingOver = null;
        sent.addAndGet(-HANDING_OVER);
        synchronized (sent) {
            sent.notifyAll();
        }
    }

    /**
     * The number of a write about to be handed to Lettuce, or -1 when it may not be. While an EVAL after NOSCRIPT
     * is being handed over by another thread, waits until it is (a few microseconds; uninterruptibly, keeping an
     * interrupt for the caller), so that this write goes behind it. The thread handing the EVAL over does not wait
     * for itself (a command listener that writes): Lettuce runs a listener's {@code commandStarted} before it writes
     * the command, so a write a listener sends from the EVAL's {@code commandStarted} goes ahead of that EVAL and
     * runs before it (a choice: waiting would deadlock that thread). The hand-over runs the connection's command listeners, which may
     * block (or wait for a write of this writer: for good); so the wait lasts the command timeout at most, after
     * which this write is not sent (-1): a write sent before the EVAL would run before it.
     */
    private long nextNumber() {
        long number = sent.incrementAndGet();
        if ((number & HANDING_OVER) == 0) {
            return number;
        }
        if (handingOver != Thread.currentThread()) {
            boolean interrupted = false;
            boolean handedOver = true;
            long deadline = System.nanoTime() + handOverNanos;
            synchronized (sent) {
                while ((sent.get() & HANDING_OVER) != 0) {
                    try {
                        if (handOverNanos == 0) {
                            sent.wait();
                            continue;
                        }
                        long left = deadline - System.nanoTime();
                        if (left <= 0) {
                            handedOver = false;
                            break;
                        }
                        TimeUnit.NANOSECONDS.timedWait(sent, left);
                    } catch (InterruptedException e) {
                        interrupted = true;
                    }
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
            if (!handedOver) {
                return -1;
            }
        }
        return number & ~HANDING_OVER;
    }

    /**
     * Loads the script of a write answered NOSCRIPT that may not be sent again as EVAL, before that write fails: the
     * writes sent after it were sent as EVALSHA too, and so will be the caller's retry. If nothing loaded the script,
     * a writer that always has a write in flight (a pipeline kept full, several threads) would have every write
     * answered NOSCRIPT after the next was sent, and fail for good. Sent from the NOSCRIPT's callback, before the
     * write fails, so a retry is sent behind it on the same connection and finds the script. On a cluster the load
     * goes to every node the client knows: the node that answered NOSCRIPT is not always the one the client routes
     * the key to (a slot moved behind the client's back: Lettuce follows the MOVED for each write, but a SCRIPT LOAD,
     * which has no key, runs on the node it is sent to, and on the old node it would leave the new one without the
     * script for good). A load that fails is only logged: the next write answered NOSCRIPT loads it again.
     */
    private void load(LuaScripts.Script script, ScriptCall.Arguments arguments) {
        try {
            CompletionStage<String> loading = commands instanceof RedisAdvancedClusterAsyncCommands<?, ?> cluster
                    ? cluster.scriptLoad(script.text().getBytes(StandardCharsets.UTF_8))
                    : commands.dispatch(
                            SCRIPT, new StatusOutput<>(StringCodec.UTF8), ScriptCall.load(script, arguments));
            loading.whenComplete((reply, failure) -> {
                if (failure != null) {
                    LOG.debug(
                            "SCRIPT LOAD after NOSCRIPT failed: {}",
                            unwrap(failure).toString());
                }
            });
        } catch (RuntimeException e) {
            LOG.debug("SCRIPT LOAD after NOSCRIPT could not be sent: {}", e.toString());
        }
    }

    /**
     * Sends the EVAL that follows a NOSCRIPT, from the EVALSHA's callback. Whatever the sending throws (a
     * command listener, a client shutting down) must still complete the caller's outcome: nobody reads the
     * callback's own stage.
     */
    private static void sendEval(
            CompletableFuture<WriteOutcome> outcome,
            String op,
            String key,
            long token,
            Supplier<? extends CompletionStage<?>> eval,
            UnaryOperator<Throwable> told) {
        try {
            eval.get()
                    .whenComplete((reply, failure) ->
                            complete(outcome, op, key, token, reply, failure == null ? null : told.apply(failure)));
        } catch (RuntimeException e) {
            complete(outcome, op, key, token, null, e);
        }
    }

    /**
     * Reads a library script's {@link FenceReply} or a user script's table into the caller's outcome. A failure
     * reaches the caller's callbacks as a {@link CompletionException} around the {@code
     * FencedRedisWriteException}, as from every other stage of this API (and {@code get()} unwraps it).
     */
    @SuppressWarnings("unchecked")
    private static void complete(
            CompletableFuture<WriteOutcome> outcome,
            String op,
            String key,
            long token,
            Object reply,
            Throwable failure) {
        if (failure != null) {
            outcome.completeExceptionally(new CompletionException(failed(op, key, token, unwrap(failure))));
            return;
        }
        WriteOutcome result;
        try {
            result = reply instanceof FenceReply fence
                    ? Replies.outcome(op, key, token, fence)
                    : Replies.outcome(op, key, token, (List<Object>) reply);
        } catch (RuntimeException e) { // the caller's stage must complete, whatever the reply was
            outcome.completeExceptionally(new CompletionException(failed(op, key, token, e)));
            return;
        }
        if (result instanceof WriteOutcome.Rejected rejected && LOG.isDebugEnabled()) {
            LOG.debug(
                    "stale fence token refused: {} of Redis key {} under token {}, stored token {}",
                    op,
                    FencedKeys.shown(key),
                    token,
                    rejected.storedToken());
        }
        outcome.complete(result);
    }

    private CompletableFuture<WriteOutcome> waitForReplicas(
            String op, String key, long token, CompletableFuture<WriteOutcome> outcome) {
        if (waitReplicas == 0) {
            return outcome;
        }
        return outcome.thenCompose(read -> read instanceof WriteOutcome.Applied applied
                ? waitForReplication().handle((replicas, failure) -> {
                    if (failure != null) {
                        throw new CompletionException(new FencedRedisWriteException(
                                "fenced " + op + " of Redis key " + FencedKeys.shown(key) + " under token "
                                        + token
                                        + " was applied, but WAIT for " + waitReplicas + " replicas failed: "
                                        + unwrap(failure),
                                key,
                                token,
                                unwrap(failure)));
                    }
                    return (WriteOutcome) new WriteOutcome.Applied(
                            applied.offeredToken(), applied.previousToken(), applied.reply(), replicas.intValue());
                })
                : CompletableFuture.completedFuture(read));
    }

    /** WAIT, or a stage failed with what its sending threw (a command listener): the write is applied either way. */
    private CompletableFuture<Long> waitForReplication() {
        try {
            return commands.waitForReplication(waitReplicas, waitMillis).toCompletableFuture();
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    static FencingRedisException failed(String op, String key, long token, Throwable failure) {
        if (failure instanceof FencingRedisException fencing) {
            return fencing;
        }
        String what = "fenced " + op + " of Redis key " + FencedKeys.shown(key) + " under token " + token;
        if (failure instanceof RedisCommandExecutionException && !(failure instanceof RedisCommandTimeoutException)) {
            String error = String.valueOf(failure.getMessage());
            if (error.startsWith(LuaScripts.BODY_FAILED)) {
                return bodyFailed(what, key, token, error.substring(LuaScripts.BODY_FAILED.length()), failure);
            }
            // an error reply: the script checks before it writes, or Redis refused the script as a whole
            return new FencedRedisWriteException(what + " failed: " + error, key, token, failure);
        }
        return new FencedRedisWriteException(
                what + " failed, and whether it applied is unknown: " + failure, key, token, failure);
    }

    /** A user script's body failed after the fence had raised the token: {@code "prior error"}. */
    private static FencedRedisWriteException bodyFailed(
            String what, String key, long token, String priorAndError, Throwable failure) {
        int space = priorAndError.indexOf(' ');
        String prior = space < 0 ? priorAndError : priorAndError.substring(0, space);
        String error = space < 0 ? "" : priorAndError.substring(space + 1);
        return new FencedRedisWriteException(
                what + " passed the fence and set the key's token to " + token + " (it was " + prior
                        + "), then the script's body failed: " + error + ". Redis does not roll a script back: the"
                        + " token stays " + token + ", so older tokens are refused, and what the body wrote before"
                        + " it failed stays; read the keys before writing again",
                key,
                token,
                failure);
    }

    /**
     * A user script's failure, told as what it was when it is an error element of an applied table: Lettuce
     * fails the whole call on one, but the body ran to its end after the fence had raised the token.
     */
    private static Throwable afterFence(String key, long token, ScriptCall.TableOutput table, Throwable failure) {
        Throwable cause = failure == null ? null : unwrap(failure);
        String error = table.errorInTable();
        if (!(cause instanceof RedisCommandExecutionException) || error == null) {
            return failure;
        }
        List<Object> reply = table.table();
        if (reply.size() < 2 || !Long.valueOf(1).equals(reply.get(0)) || !(reply.get(1) instanceof String prior)) {
            return failure;
        }
        return new FencedRedisWriteException(
                "fenced EVAL of Redis key " + FencedKeys.shown(key) + " under token " + token
                        + " passed the fence and set the key's"
                        + " token to " + token + " (it was " + prior + "), and the script's body ran to its end, but"
                        + " its reply holds an error: " + error + ". The token stays " + token + ", so older tokens"
                        + " are refused, and what the body wrote stays; read the keys before writing again",
                key,
                token,
                cause);
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
