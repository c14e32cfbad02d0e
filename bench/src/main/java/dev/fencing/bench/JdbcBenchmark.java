package dev.fencing.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.fencing.jdbc.FencedBatch;
import dev.fencing.jdbc.FencedTable;
import dev.fencing.jdbc.FencedUpdate;
import dev.fencing.jdbc.FencedWriter;
import dev.fencing.jdbc.RowKey;
import dev.fencing.jdbc.WriteOutcome;
import dev.fencing.testsupport.PostgresEndpoint;
import dev.fencing.testsupport.PostgresServers;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.flywaydb.core.Flyway;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.argument.Argument;
import org.jdbi.v3.core.statement.Update;

/**
 * {@code bench/run jdbc}: fencing-jdbc's writes against the same plain writes, in alternating rounds in one
 * JVM on one PostgreSQL server (embedded, committing durably like a production server, or the one named by
 * {@code FENCING_POSTGRES_URL}).
 *
 * <p>First table, the write path (the ratio line): both sides write the same protected table ({@code
 * fencing.protect_table}: fence column and guard trigger), through Jdbi and the same HikariCP pool.
 *
 * <ul>
 *   <li>UPDATE by primary key on 1 and on 4 connections: {@link FencedWriter#tryUpdate} (one statement
 *       carrying the fence condition; it reports the outcome) against {@code UPDATE ... WHERE id = :id};
 *   <li>a 1,000-row batch: {@link FencedWriter#tryBatch} against the same {@code UPDATE ... FROM
 *       unnest(...)} a developer would write without fencing.
 * </ul>
 *
 * <p>Second table, the schema: the same plain writes on an unprotected twin table against the protected
 * one. This is what {@code fencing.protect_table} costs every UPDATE of the table, fenced or not: the guard
 * trigger fires for every updated row (PostgreSQL fetches the old row for it even though its {@code WHEN}
 * clause is false). A write through fencing-jdbc to a protected table costs about the product of the two
 * ratios compared with a plain write to a table that was never protected.
 *
 * <p>Third table, the token column: the plain batch against the same batch also setting the fence column to
 * a fresh token, with no check. Every fenced write sets that column, and PostgreSQL logs an UPDATE's new row
 * from its first changed byte to its last: with the fence column at the end of the row (where {@code
 * protect_table} adds it) and a wide column before it, the row's WAL about doubles (on this table, about 110
 * kB a batch without the token and 200 kB with it). This is what writing the token costs before any check.
 *
 * <p>Each fenced write takes a fresh token from a counter, as a stream of lock grants would. Prints the
 * tables and ends with {@code jdbc fenced/raw throughput ratio: X.XX}, the lowest case of the first.
 *
 * <p>The single-connection cases of the first table run rounds twice as long as the others ({@code
 * --single-round-millis}): one connection waits for one durable commit at a time, so a few slow fsyncs move
 * a short round's rate, and its ratio moved between 0.90 and 0.98 from run to run with 600 ms rounds.
 *
 * <pre>{@code
 * bench/run jdbc [--rounds 40] [--round-millis 600] [--single-round-millis 1200] [--shapes]
 * }</pre>
 *
 * <p>{@code --shapes} prints, instead of the tables and the ratio line, where the batch's time goes: {@link
 * JdbcShapes}.
 */
public final class JdbcBenchmark {
    static final int ROWS = 10_000;
    static final int BATCH = 1_000;

    static final String PROTECTED = "bench_fenced";
    static final String UNPROTECTED = "bench_plain";

    private final Jdbi jdbi;
    private final FencedWriter writer;
    private final FencedTable fenced;
    private final long roundMillis;
    private final long singleRoundMillis;
    private final AtomicLong tokens = new AtomicLong();
    private final LongAdder notApplied = new LongAdder();

    private JdbcBenchmark(Jdbi jdbi, long roundMillis, long singleRoundMillis) {
        this.jdbi = jdbi;
        this.roundMillis = roundMillis;
        this.singleRoundMillis = singleRoundMillis;
        this.writer = FencedWriter.builder(jdbi).build();
        this.fenced = FencedTable.builder().table(PROTECTED).keyColumns("id").build(jdbi);
    }

    public static void main(String[] args) throws Exception {
        // many alternating rounds: a durable commit waits for the disk, whose latency swings widely on a
        // shared machine, and alternating rounds spread that noise evenly over both sides. Each round is long
        // enough to hold over 1,000 commits on one connection (about 2,000 durable single-row UPDATEs a
        // second): 150 ms rounds held about 300, and a few slow fsyncs in one round moved the
        // single-connection ratio between 0.90 and 0.98 from run to run (four connections almost as much).
        // The single-connection cases of the write path, which set the ratio line, take rounds twice as long
        int rounds = 40;
        long roundMillis = 600;
        long singleRoundMillis = 1_200;
        boolean shapes = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                case "--round-millis" -> roundMillis = Long.parseLong(args[++i]);
                case "--single-round-millis" -> singleRoundMillis = Long.parseLong(args[++i]);
                case "--shapes" -> shapes = true;
                default -> {
                    System.err.println(
                            "usage: JdbcBenchmark [--rounds N] [--round-millis MS] [--single-round-millis MS]"
                                    + " [--shapes]");
                    System.exit(2);
                }
            }
        }
        try (PostgresEndpoint server = PostgresServers.start(true);
                PostgresEndpoint database = server.createDatabase("bench_jdbc")) {
            Flyway.configure()
                    .dataSource(database.dataSource())
                    .locations("classpath:dev/fencing/db/migration")
                    .load()
                    .migrate();
            HikariConfig config = new HikariConfig();
            config.setDataSource(database.dataSource());
            config.setMaximumPoolSize(4);
            config.setMinimumIdle(4);
            try (HikariDataSource pool = new HikariDataSource(config)) {
                Jdbi jdbi = Jdbi.create(pool);
                JdbcSchema.create(jdbi, ROWS);
                String settings = jdbi.withHandle(h -> h.createQuery("SELECT 'PostgreSQL ' || current_setting("
                                + "'server_version') || ', fsync=' || current_setting('fsync')"
                                + " || ', synchronous_commit=' || current_setting('synchronous_commit')")
                        .mapTo(String.class)
                        .one());
                JdbcBenchmark bench = new JdbcBenchmark(jdbi, roundMillis, singleRoundMillis);
                if (shapes) {
                    System.out.println(
                            "jdbc benchmark: " + settings + "; " + ROWS + " rows; " + roundMillis + " ms rounds");
                    try (Handle handle = jdbi.open()) {
                        new JdbcShapes(handle, bench.writer, bench.fenced, bench.tokens, BATCH, ROWS)
                                .run(rounds, roundMillis, System.out);
                    }
                } else {
                    bench.run(rounds, settings);
                }
            }
        }
    }

    private void run(int rounds, String settings) throws Exception {
        System.out.printf(
                Locale.ROOT,
                "jdbc benchmark: %s; %d rows; %d ms rounds (single-connection writes: %d ms); %s%n",
                settings,
                ROWS,
                roundMillis,
                singleRoundMillis,
                System.getenv(PostgresServers.URL_ENV) == null ? "embedded server" : "external server");
        AlternatingRuns writes = new AlternatingRuns(rounds);
        long single = singleRoundMillis;
        writes.compare(
                "UPDATE by primary key, 1 connection",
                () -> rawUpdates(PROTECTED, 1, single),
                () -> fencedUpdates(1, single));
        writes.compare(
                "UPDATE by primary key, 4 connections",
                () -> rawUpdates(PROTECTED, 4, roundMillis),
                () -> fencedUpdates(4, roundMillis));
        writes.compare(
                "1,000-row batch (rows/s), 1 connection",
                () -> rawBatches(PROTECTED, single),
                () -> fencedBatches(single));
        AlternatingRuns schema = new AlternatingRuns(rounds);
        schema.compare(
                "UPDATE by primary key, 1 connection",
                () -> rawUpdates(UNPROTECTED, 1, roundMillis),
                () -> rawUpdates(PROTECTED, 1, roundMillis));
        schema.compare(
                "1,000-row batch (rows/s), 1 connection",
                () -> rawBatches(UNPROTECTED, roundMillis),
                () -> rawBatches(PROTECTED, roundMillis));
        AlternatingRuns token = new AlternatingRuns(rounds);
        token.compare(
                "1,000-row batch (rows/s), 1 connection",
                () -> rawBatches(PROTECTED, roundMillis, false),
                () -> rawBatches(PROTECTED, roundMillis, true));
        System.out.println();
        System.out.println("write path: plain UPDATE (raw) and fencing-jdbc (fenced), both on the protected table");
        writes.printTable(System.out);
        System.out.printf(
                Locale.ROOT, "fenced writes not applied (token races between threads): %d%n", notApplied.sum());
        System.out.println();
        System.out.println("schema: plain UPDATE on an unprotected twin (raw) and on the protected table (fenced)");
        schema.printTable(System.out);
        System.out.printf(Locale.ROOT, "protected/unprotected table ratio: %.2f%n", schema.lowestRatio());
        System.out.println();
        System.out.println("token column: the plain batch (raw) and the same batch also setting the fence column to a"
                + " fresh token, unchecked (fenced)");
        token.printTable(System.out);
        System.out.printf(Locale.ROOT, "token-setting/plain batch ratio: %.2f%n", token.lowestRatio());
        System.out.printf(Locale.ROOT, "jdbc fenced/raw throughput ratio: %.2f%n", writes.lowestRatio());
    }

    private double rawUpdates(String table, int connections, long millis) throws Exception {
        String sql = "UPDATE " + table + " SET counter = counter + 1 WHERE id = :id";
        return timed(connections, millis, () -> {
            long id = randomId();
            jdbi.useHandle(h -> h.createUpdate(sql).bind("id", id).execute());
            return 1;
        });
    }

    private double fencedUpdates(int connections, long millis) throws Exception {
        return timed(connections, millis, () -> {
            FencedUpdate update = FencedUpdate.builder(fenced)
                    .key(randomId())
                    .setExpression("counter", "counter + 1")
                    .build();
            count(writer.tryUpdate(update, tokens.incrementAndGet()));
            return 1;
        });
    }

    private double rawBatches(String table, long millis) throws Exception {
        return rawBatches(table, millis, false);
    }

    /** The plain batch; with {@code setsToken}, it also sets the fence column to a fresh token, unchecked. */
    private double rawBatches(String table, long millis, boolean setsToken) throws Exception {
        String sql = "UPDATE " + table + " AS t SET counter = v.counter"
                + (setsToken ? ", last_fence_token = CAST(:token AS bigint)" : "")
                + " FROM unnest(CAST(:ids AS bigint[]), CAST(:counters AS bigint[])) AS v(id, counter)"
                + " WHERE t.id = v.id";
        return timed(1, millis, () -> {
            long first = firstBatchId();
            Long[] ids = new Long[BATCH];
            Long[] values = new Long[BATCH];
            for (int i = 0; i < BATCH; i++) {
                ids[i] = first + i;
                values[i] = first * 7 + i;
            }
            // arrays of Long, which pgjdbc sends in binary (Jdbi's bindArray hands it an Object[], sent as
            // text), as the fenced batch sends its own
            long token = setsToken ? tokens.incrementAndGet() : 0;
            jdbi.useHandle(h -> {
                Update update =
                        h.createUpdate(sql).bind("ids", bigintArray(ids)).bind("counters", bigintArray(values));
                if (setsToken) {
                    update.bind("token", token);
                }
                update.execute();
            });
            return BATCH;
        });
    }

    static Argument bigintArray(Long[] elements) {
        return (position, statement, ctx) -> {
            java.sql.Array array = statement.getConnection().createArrayOf("bigint", elements);
            ctx.addCleanable(array::free);
            statement.setArray(position, array);
        };
    }

    private double fencedBatches(long millis) throws Exception {
        return timed(1, millis, () -> {
            long first = firstBatchId();
            FencedBatch.Builder batch = FencedBatch.builder(fenced).columns("counter");
            long token = tokens.incrementAndGet();
            for (int i = 0; i < BATCH; i++) {
                batch.add(token, RowKey.of(first + i), first * 7 + i);
            }
            writer.tryBatch(batch.build()).forEach(this::count);
            return BATCH;
        });
    }

    private void count(WriteOutcome outcome) {
        if (!outcome.isApplied()) {
            notApplied.increment();
        }
    }

    private static long randomId() {
        return ThreadLocalRandom.current().nextLong(1, ROWS + 1);
    }

    private static long firstBatchId() {
        return ThreadLocalRandom.current().nextLong(0, ROWS / BATCH) * BATCH + 1;
    }

    @FunctionalInterface
    private interface Operation {
        /** Does one unit of work and returns how many operations it counts for. */
        int run();
    }

    /** Runs the operation on {@code threads} threads for one round of {@code millis}; returns operations per second. */
    private double timed(int threads, long millis, Operation operation) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        LongAdder done = new LongAdder();
        long start = System.nanoTime();
        long deadline = start + TimeUnit.MILLISECONDS.toNanos(millis);
        List<Future<?>> futures = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            futures.add(pool.submit(() -> {
                while (System.nanoTime() < deadline) {
                    done.add(operation.run());
                }
                return null;
            }));
        }
        for (Future<?> future : futures) {
            future.get();
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        pool.shutdown();
        return done.sum() / seconds;
    }
}
