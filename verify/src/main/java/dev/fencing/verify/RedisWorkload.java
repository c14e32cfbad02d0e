package dev.fencing.verify;

import dev.fencing.redis.FencedRedis;
import dev.fencing.verify.checker.CheckResult;
import dev.fencing.verify.checker.History;
import dev.fencing.verify.checker.RedisChecker;
import dev.fencing.verify.checker.RedisState;
import dev.fencing.verify.client.RedisKeys;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * The redis resource: each mode's run writes keys of its own, {@code {verify-<run>-<mode>-r<n>}:value} and
 * {@code ...:log} (see {@code client.RedisKeys}), plus the value's token key in the fenced run. At the end it reads
 * every resource's log, value and token key with plain commands and hands them, with the histories, to {@link
 * RedisChecker}. Not thread-safe: one run at a time.
 */
final class RedisWorkload implements Workload {
    private static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(10);

    private final Servers servers;
    private final String runId;
    private final int resources;

    RedisWorkload(Servers servers, String runId, int resources) {
        this.servers = servers;
        this.runId = runId;
        this.resources = resources;
    }

    @Override
    public void prepare(Mode mode) {
        remove(mode); // a fresh run id has none; a reused one starts clean
    }

    @Override
    public List<String> writerArguments(Mode mode) {
        return List.of("redis=" + servers.clientRedisUri(), "keyPrefix=" + prefix(mode));
    }

    @Override
    public CheckResult check(Mode mode, History history) {
        RedisState state = redis(commands -> {
            Map<String, List<Long>> logs = new HashMap<>();
            Map<String, String> values = new HashMap<>();
            Map<String, Long> tokens = new HashMap<>();
            for (String resource : resources()) {
                String valueKey = RedisKeys.value(prefix(mode), resource);
                String logKey = RedisKeys.log(prefix(mode), resource);
                List<String> log = commands.lrange(logKey, 0, -1);
                if (!log.isEmpty()) {
                    logs.put(resource, ids(logKey, log));
                }
                String value = commands.get(valueKey);
                if (value != null) {
                    values.put(resource, value);
                }
                String tokenKey = FencedRedis.tokenKey(valueKey);
                String token = commands.get(tokenKey);
                if (token != null) {
                    tokens.put(resource, number(tokenKey, token));
                }
            }
            return new RedisState(logs, values, tokens);
        });
        return RedisChecker.check(history, state);
    }

    @Override
    public void remove(Mode mode) {
        redis(commands -> {
            List<String> keys = new ArrayList<>();
            for (String resource : resources()) {
                String value = RedisKeys.value(prefix(mode), resource);
                keys.addAll(List.of(value, FencedRedis.tokenKey(value), RedisKeys.log(prefix(mode), resource)));
            }
            return commands.del(keys.toArray(String[]::new));
        });
    }

    private String prefix(Mode mode) {
        return "verify-" + runId + "-" + mode.label();
    }

    private List<String> resources() {
        List<String> names = new ArrayList<>();
        for (int i = 1; i <= resources; i++) {
            names.add("r" + i);
        }
        return names;
    }

    static List<Long> ids(String key, List<String> entries) {
        List<Long> ids = new ArrayList<>();
        for (String entry : entries) {
            ids.add(number(key, entry));
        }
        return ids;
    }

    /**
     * The number whose text {@code key} holds; text the writers do not store (they store {@code Long.toString} of
     * ids and tokens), {@code " 101"}, {@code "+101"} or {@code "0101"} included, makes the state unusable rather
     * than being read as 101.
     *
     * @throws VerifyException naming the key and quoting the text
     */
    static long number(String key, String text) {
        long number;
        try {
            number = Long.parseLong(text);
        } catch (NumberFormatException e) {
            // the writers store only operation ids and tokens; anything else means something else wrote the key
            throw new VerifyException("Redis key " + key + " holds '" + text + "', not a number", e);
        }
        if (!Long.toString(number).equals(text)) {
            throw new VerifyException("Redis key " + key + " holds '" + text + "', not the text of a number as the"
                    + " writers store it (" + number + " would be '" + number + "')");
        }
        return number;
    }

    private <T> T redis(Function<RedisCommands<String, String>, T> work) {
        RedisURI uri = RedisURI.create(servers.redisUri());
        uri.setTimeout(COMMAND_TIMEOUT);
        RedisClient client = RedisClient.create(uri);
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            return work.apply(connection.sync());
        } catch (RedisException e) {
            throw new VerifyException("Redis at " + servers.redisUri() + " failed: " + e.getMessage(), e);
        } finally {
            client.shutdown();
        }
    }
}
