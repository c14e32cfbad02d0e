package dev.fencing.verify.client;

import dev.fencing.harness.ChildArguments;
import dev.fencing.harness.PointGate;
import dev.fencing.lock.Lease;
import dev.fencing.redis.FencedRedis;
import dev.fencing.redis.FencedScript;
import dev.fencing.redis.WriteOutcome;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Random;

/**
 * The redis resource's writes: each operation sets its resource's value key to the operation's id, through
 * fencing-redis under the lock's token in the fenced run, with plain commands in the control run. Half of the
 * operations (drawn from the seed, the same in both runs) are script writes that also append the id to the
 * resource's log key in the same step, so that the log shows the order in which Redis applied them; the others
 * are a bare SET. The history's invoke is written just before the write is sent, after the {@link
 * PausePoint#LOCK_WRITE} point (where a pause or partition holds the writer), which is what lets the checker order
 * a late write after the newer ones by real time. Not thread-safe: one writer thread.
 */
final class RedisWrites implements WriterWorkload<RedisWrites.Path> {
    /** How an operation writes. The labels are the history's {@code path}; the checker reads the suffix. */
    enum Path {
        /** {@code FencedRedis.tryEval}: the fence, then SET value and RPUSH log, in one script. */
        SCRIPT("script"),
        /** {@code FencedRedis.trySet} of the value. */
        SET("set"),
        /** The control run's EVAL of the same body, no token checked. */
        PLAIN_SCRIPT("plain-script"),
        /** The control run's plain SET. */
        PLAIN_SET("plain-set");

        private final String label;

        Path(String label) {
            this.label = label;
        }

        String label() {
            return label;
        }
    }

    private static final String BODY =
            "redis.call('SET', KEYS[1], ARGV[1]) redis.call('RPUSH', KEYS[2], ARGV[1]) return 1";
    private static final FencedScript SCRIPT = FencedScript.of(BODY);
    private static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(10);

    private final boolean fenced;
    private final String prefix;
    private final HistoryWriter history;
    private final CoordinatorLink link;
    private final PointGate<PausePoint> gate;
    private final RedisClient client;
    private StatefulRedisConnection<String, String> connection;
    private FencedRedis redis;

    /** Arguments: {@code redis} (a URI), {@code keyPrefix}. */
    RedisWrites(
            ChildArguments args,
            boolean fenced,
            HistoryWriter history,
            CoordinatorLink link,
            PointGate<PausePoint> gate) {
        this.fenced = fenced;
        this.prefix = args.text("keyPrefix");
        this.history = history;
        this.link = link;
        this.gate = gate;
        RedisURI uri = RedisURI.create(args.text("redis"));
        uri.setTimeout(COMMAND_TIMEOUT);
        this.client = RedisClient.create(uri);
    }

    @Override
    public void connect() {
        connection = client.connect();
        redis = FencedRedis.builder(connection).build(); // STRICT: each grant writes the key once
    }

    @Override
    public Path plan(Random random) {
        boolean script = random.nextBoolean();
        if (fenced) {
            return script ? Path.SCRIPT : Path.SET;
        }
        return script ? Path.PLAIN_SCRIPT : Path.PLAIN_SET;
    }

    @Override
    public void operate(Lease lease, String resource, long op, Path path) {
        long token = lease.token();
        link.emit("LOCKED", resource, token);
        gate.pass(PausePoint.LOCK_WRITE, () -> link.emit("POINT", PausePoint.LOCK_WRITE, resource, token, 0));
        history.invokeAppend(op, resource, token, path.label());
        WriteResult result = write(path, resource, op, token);
        switch (result.kind()) {
            case APPLIED -> {
                history.okAppend(op, resource, token);
                link.emit("WRITTEN", resource, token);
            }
            case REFUSED -> {
                history.failAppend(op, resource, token, result.detail());
                link.emit("REFUSED", resource, token);
            }
            case INDETERMINATE -> {
                history.infoAppend(op, resource, token, result.detail());
                link.emit("UNKNOWN", resource, token);
            }
        }
    }

    /** Never throws: a failure after the request may have left is indeterminate. */
    private WriteResult write(Path path, String resource, long op, long token) {
        String value = RedisKeys.value(prefix, resource);
        String id = Long.toString(op);
        try {
            return switch (path) {
                case SCRIPT ->
                    outcome(redis.tryEval(SCRIPT, List.of(value, RedisKeys.log(prefix, resource)), List.of(id), token));
                case SET -> outcome(redis.trySet(value, id, token));
                case PLAIN_SCRIPT -> {
                    connection
                            .sync()
                            .eval(
                                    BODY,
                                    ScriptOutputType.INTEGER,
                                    new String[] {value, RedisKeys.log(prefix, resource)},
                                    id);
                    yield WriteResult.applied();
                }
                case PLAIN_SET -> {
                    connection.sync().set(value, id);
                    yield WriteResult.applied();
                }
            };
        } catch (RuntimeException e) {
            return WriteResult.indeterminate(e);
        }
    }

    private static WriteResult outcome(WriteOutcome outcome) {
        if (outcome instanceof WriteOutcome.Applied) {
            return WriteResult.applied();
        }
        if (outcome instanceof WriteOutcome.Rejected rejected) {
            return WriteResult.refused("rejected: stored token " + rejected.storedToken());
        }
        return WriteResult.refused(outcome.toString().toLowerCase(Locale.ROOT));
    }

    @Override
    public void close() {
        if (connection != null) {
            connection.close();
        }
        client.shutdown();
    }
}
