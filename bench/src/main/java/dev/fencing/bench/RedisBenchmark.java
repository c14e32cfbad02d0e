package dev.fencing.bench;

import dev.fencing.redis.FencedRedis;
import dev.fencing.redis.FencedRedisAsync;
import dev.fencing.redis.WriteOutcome;
import dev.fencing.testsupport.RedisEndpoint;
import dev.fencing.testsupport.RedisServers;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.api.sync.RedisCommands;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * {@code bench/run redis}: fencing-redis's writes against the plain commands, in alternating rounds in one
 * JVM on one Redis server (embedded, or the one named by {@code FENCING_REDIS_URL}), both sides on the same
 * Lettuce connection.
 *
 * <ul>
 *   <li>SET of a string, HSET of two fields, and the guarded decrement ({@link FencedRedis#tryDecrementBy},
 *       the inventory case) against plain {@code SET}, {@code HSET} and {@code DECRBY};
 *   <li>each one at a time (a round trip per write) and pipelined ({@value #PIPELINE} writes in flight,
 *       through {@link FencedRedis#async()} and Lettuce's async commands).
 * </ul>
 *
 * <p>A second table runs a script that does nothing ({@code return 1}) against plain {@code SET}, pipelined: how
 * much of the pipelined gap is the price of calling a script at all, on this client and server, rather than the
 * fence's own work (its keys and arguments, its reads and writes in Redis, its reply). It ends with {@code redis
 * empty-script/raw throughput ratio: X.XX}, before the last line.
 *
 * <p>A third table gives the CPU time each write cost, over all rounds of a case: this JVM's (the caller and
 * Lettuce's event loop) and the Redis server's ({@code used_cpu_sys + used_cpu_user} of {@code INFO cpu}, read
 * before and after each round). On a machine whose cores are busy with other work, the throughput ratio tends
 * to the ratio of these totals; on an idle one, to that of the busiest thread.
 *
 * <p>Each fenced write takes a fresh token from a counter, as a stream of lock grants would, so every one is
 * applied; keys are drawn at random from {@value #KEYS}. Prints the tables and ends with {@code redis
 * fenced/raw throughput ratio: X.XX}, the lowest case.
 *
 * <pre>{@code
 * bench/run redis [--rounds 20] [--round-millis 400]
 * }</pre>
 */
public final class RedisBenchmark {
    static final int KEYS = 10_000;
    static final int PIPELINE = 64;
    /** The counters start high enough that no decrement in a run meets the guard. */
    static final long STOCK = 1L << 50;

    private final RedisCommands<String, String> sync;
    private final RedisAsyncCommands<String, String> async;
    private final FencedRedis fenced;
    private final FencedRedisAsync fencedAsync;
    private final long roundMillis;
    private final AtomicLong tokens = new AtomicLong();
    private final LongAdder notApplied = new LongAdder();
    private final com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    /** Per case and side: writes, this JVM's CPU nanoseconds, the server's CPU microseconds. */
    private final Map<String, long[]> cpu = new LinkedHashMap<>();
    /** Writes done by the last round. */
    private long lastWrites;

    private RedisBenchmark(StatefulRedisConnection<String, String> connection, long roundMillis) {
        this.sync = connection.sync();
        this.async = connection.async();
        this.fenced = FencedRedis.builder(connection).build();
        this.fencedAsync = fenced.async();
        this.roundMillis = roundMillis;
    }

    public static void main(String[] args) throws Exception {
        int rounds = 20;
        long roundMillis = 400;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                case "--round-millis" -> roundMillis = Long.parseLong(args[++i]);
                default -> {
                    System.err.println("usage: RedisBenchmark [--rounds N] [--round-millis MS]");
                    System.exit(2);
                }
            }
        }
        try (RedisEndpoint redis = RedisServers.start()) {
            RedisClient client = RedisClient.create(redis.uri());
            try (StatefulRedisConnection<String, String> connection = client.connect()) {
                String version = connection
                        .sync()
                        .info("server")
                        .lines()
                        .filter(line -> line.startsWith("redis_version:"))
                        .findFirst()
                        .orElse("redis_version:?");
                new RedisBenchmark(connection, roundMillis).run(rounds, version, redis.toString());
            } finally {
                client.shutdown();
            }
        }
    }

    private void run(int rounds, String version, String server) throws Exception {
        System.out.printf(
                Locale.ROOT,
                "redis benchmark: %s on %s; %d keys; %d ms rounds; pipelined %d in flight%n",
                version,
                server,
                KEYS,
                roundMillis,
                PIPELINE);
        for (int i = 0; i < KEYS; i++) {
            sync.set(counterKey(i), Long.toString(STOCK));
        }
        AlternatingRuns runs = new AlternatingRuns(rounds);
        compare(
                runs,
                "SET, one at a time",
                () -> oneAtATime(() -> sync.set(stringKey(), "value")),
                () -> oneAtATime(() -> count(fenced.trySet(stringKey(), "value", tokens.incrementAndGet()))));
        compare(
                runs,
                "HSET 2 fields, one at a time",
                () -> oneAtATime(() -> sync.hset(hashKey(), fields())),
                () -> oneAtATime(() -> count(fenced.tryHset(hashKey(), fields(), tokens.incrementAndGet()))));
        compare(
                runs,
                "guarded decrement, one at a time",
                () -> oneAtATime(() -> sync.decrby(counterKey(), 1)),
                () -> oneAtATime(() -> count(fenced.tryDecrementBy(counterKey(), 1, tokens.incrementAndGet()))));
        compare(
                runs,
                "SET, pipelined",
                () -> pipelined(() -> async.set(stringKey(), "value")),
                () -> pipelined(() -> fencedAsync.trySet(stringKey(), "value", tokens.incrementAndGet())));
        compare(
                runs,
                "HSET 2 fields, pipelined",
                () -> pipelined(() -> async.hset(hashKey(), fields())),
                () -> pipelined(() -> fencedAsync.tryHset(hashKey(), fields(), tokens.incrementAndGet())));
        compare(
                runs,
                "guarded decrement, pipelined",
                () -> pipelined(() -> async.decrby(counterKey(), 1)),
                () -> pipelined(() -> fencedAsync.tryDecrementBy(counterKey(), 1, tokens.incrementAndGet())));
        // what calling a script at all costs, against which the fence's own work can be told apart
        String empty = sync.scriptLoad("return 1");
        AlternatingRuns ceiling = new AlternatingRuns(rounds);
        compare(
                ceiling,
                "EVALSHA of 'return 1', pipelined",
                () -> pipelined(() -> async.set(stringKey(), "value")),
                () -> pipelined(() -> async.evalsha(empty, ScriptOutputType.INTEGER)));
        System.out.println();
        System.out.println("plain commands (raw) and fencing-redis (fenced), one Lettuce connection");
        runs.printTable(System.out);
        System.out.println();
        System.out.println("plain SET (raw) and a script that does nothing (fenced): the price of a script call");
        ceiling.printTable(System.out);
        System.out.printf(Locale.ROOT, "redis empty-script/raw throughput ratio: %.2f%n", ceiling.lowestRatio());
        System.out.println();
        System.out.println("CPU per write, microseconds: this JVM (JVM) and the Redis server (srv)");
        printCpu();
        System.out.printf(Locale.ROOT, "fenced writes not applied: %d%n", notApplied.sum());
        System.out.printf(Locale.ROOT, "redis fenced/raw throughput ratio: %.2f%n", runs.lowestRatio());
    }

    /** {@link AlternatingRuns#compare}, counting each side's CPU time per write. */
    private void compare(AlternatingRuns runs, String name, AlternatingRuns.Round raw, AlternatingRuns.Round fenced)
            throws Exception {
        runs.compare(name, metered(name + "/raw", raw), metered(name + "/fenced", fenced));
    }

    private AlternatingRuns.Round metered(String side, AlternatingRuns.Round round) {
        return () -> {
            long serverBefore = serverCpuMicros();
            long clientBefore = os.getProcessCpuTime();
            double rate = round.opsPerSecond();
            long client = os.getProcessCpuTime() - clientBefore;
            long server = serverCpuMicros() - serverBefore;
            long[] sums = cpu.computeIfAbsent(side, s -> new long[3]);
            sums[0] += lastWrites;
            sums[1] += client;
            sums[2] += server;
            return rate;
        };
    }

    /** The server's CPU time so far ({@code INFO cpu}), in microseconds. */
    private long serverCpuMicros() {
        double seconds = 0;
        for (String line : sync.info("cpu").split("\r?\n")) {
            if (line.startsWith("used_cpu_sys:") || line.startsWith("used_cpu_user:")) {
                seconds +=
                        Double.parseDouble(line.substring(line.indexOf(':') + 1).trim());
            }
        }
        return Math.round(seconds * 1e6);
    }

    private void printCpu() {
        System.out.printf(
                Locale.ROOT,
                "| %-40s | %8s | %8s | %8s | %8s | %8s | %6s |%n",
                "case",
                "raw JVM",
                "raw srv",
                "fen JVM",
                "fen srv",
                "fen tot",
                "tot/raw");
        System.out.printf(
                Locale.ROOT,
                "|%s|%s|%s|%s|%s|%s|%s|%n",
                "-".repeat(42),
                "-".repeat(10),
                "-".repeat(10),
                "-".repeat(10),
                "-".repeat(10),
                "-".repeat(10),
                "-".repeat(8));
        for (Map.Entry<String, long[]> entry : cpu.entrySet()) {
            String side = entry.getKey();
            if (!side.endsWith("/raw")) {
                continue;
            }
            String name = side.substring(0, side.length() - "/raw".length());
            long[] raw = entry.getValue();
            long[] fenced = cpu.get(name + "/fenced");
            double rawClient = raw[1] / 1e3 / raw[0];
            double rawServer = (double) raw[2] / raw[0];
            double fencedClient = fenced[1] / 1e3 / fenced[0];
            double fencedServer = (double) fenced[2] / fenced[0];
            System.out.printf(
                    Locale.ROOT,
                    "| %-40s | %8.2f | %8.2f | %8.2f | %8.2f | %8.2f | %6.3f |%n",
                    name,
                    rawClient,
                    rawServer,
                    fencedClient,
                    fencedServer,
                    fencedClient + fencedServer,
                    (rawClient + rawServer) / (fencedClient + fencedServer));
        }
        System.out.println("(all rounds, the warm-up included; tot/raw: the raw side's total CPU per write over"
                + " the fenced side's, which the throughput ratio tends to when no core is idle)");
    }

    private double oneAtATime(Runnable write) {
        long done = 0;
        long start = System.nanoTime();
        long deadline = start + TimeUnit.MILLISECONDS.toNanos(roundMillis);
        while (System.nanoTime() < deadline) {
            write.run();
            done++;
        }
        lastWrites = done;
        return done / ((System.nanoTime() - start) / 1e9);
    }

    /** Sends {@value #PIPELINE} writes, waits for all of them, again until the round ends. */
    private double pipelined(java.util.function.Supplier<? extends CompletionStage<?>> write) {
        long done = 0;
        long start = System.nanoTime();
        long deadline = start + TimeUnit.MILLISECONDS.toNanos(roundMillis);
        List<CompletableFuture<?>> inFlight = new ArrayList<>(PIPELINE);
        while (System.nanoTime() < deadline) {
            for (int i = 0; i < PIPELINE; i++) {
                inFlight.add(write.get().toCompletableFuture());
            }
            for (CompletableFuture<?> future : inFlight) {
                if (future.join() instanceof WriteOutcome outcome) {
                    count(outcome);
                }
            }
            inFlight.clear();
            done += PIPELINE;
        }
        lastWrites = done;
        return done / ((System.nanoTime() - start) / 1e9);
    }

    private void count(WriteOutcome outcome) {
        if (!outcome.isApplied()) {
            notApplied.increment();
        }
    }

    private static int randomKey() {
        return ThreadLocalRandom.current().nextInt(KEYS);
    }

    private static String stringKey() {
        return "{bench:s:" + randomKey() + "}";
    }

    private static String hashKey() {
        return "{bench:h:" + randomKey() + "}";
    }

    private static String counterKey() {
        return counterKey(randomKey());
    }

    private static String counterKey(int i) {
        return "{bench:c:" + i + "}";
    }

    private static Map<String, String> fields() {
        return Map.of("state", "RESERVED", "by", "worker-1");
    }
}
