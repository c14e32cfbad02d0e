package dev.fencing.bench;

import dev.fencing.jdbc.FencedBatch;
import dev.fencing.jdbc.FencedTable;
import dev.fencing.jdbc.FencedWriter;
import dev.fencing.jdbc.RowKey;
import dev.fencing.jdbc.WriteOutcome;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.jdbi.v3.core.Handle;

/**
 * {@code bench/run jdbc --shapes}: where the 1,000-row batch's time goes, as four statement shapes on one
 * connection to the protected table, each step adding one part of {@link FencedWriter#tryBatch} to the one
 * before:
 *
 * <ol>
 *   <li>{@code plain}: the batch's raw baseline, {@code UPDATE ... FROM unnest(...)};
 *   <li>{@code fence}: the same, also setting the fence column, under the fence condition, its update count
 *       read. Not a complete fenced write: on an auto-commit connection it commits the rows it wrote even
 *       when it refused others, and it cannot tell a key that names two rows;
 *   <li>{@code fence + count}: that UPDATE in a CTE whose count fails the statement (and so undoes it) unless
 *       it wrote a row for every key: what makes the write all or nothing with no transaction around it;
 *   <li>{@code tryBatch}: the writer's own, which also confirms in the statement the unique index the count
 *       relies on, builds the {@link FencedBatch} and its outcomes.
 * </ol>
 *
 * <p>For each: rows per second (the median of its rounds, in rotating order), the ratio to {@code plain}, and
 * the CPU time per batch of this JVM's thread (client) and of the connection's server process (server, from
 * {@code /proc/PID/schedstat}, for a server on this machine only). CPU time moves much less than throughput
 * with a busy disk or a busy machine.
 */
final class JdbcShapes {
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private final Handle handle;
    private final FencedWriter writer;
    private final FencedTable table;
    private final AtomicLong tokens;
    private final int batch;
    private final int rows;

    JdbcShapes(Handle handle, FencedWriter writer, FencedTable table, AtomicLong tokens, int batch, int rows) {
        this.handle = handle;
        this.writer = writer;
        this.table = table;
        this.tokens = tokens;
        this.batch = batch;
        this.rows = rows;
    }

    @FunctionalInterface
    private interface Shape {
        /** Writes one batch: the rows {@code ids} get {@code values}, under {@code token}. */
        void write(Long[] ids, Long[] values, long token);
    }

    void run(int cycles, long roundMillis, PrintStream out) {
        String target = JdbcBenchmark.PROTECTED;
        String from = " FROM unnest(CAST(:ids AS bigint[]), CAST(:counters AS bigint[])) AS v(id, counter)"
                + " WHERE t.id = v.id";
        String plain = "UPDATE " + target + " AS t SET counter = v.counter" + from;
        String fence = "UPDATE " + target + " AS t SET counter = v.counter, last_fence_token = CAST(:token AS bigint)"
                + from + " AND t.last_fence_token <= CAST(:token AS bigint)";
        String counted = "WITH applied AS (" + fence + " RETURNING 1) SELECT CAST(CASE WHEN count(*) = " + batch
                + " THEN '0' ELSE 'fenced batch wrote ' || count(*) || ' rows' END AS bigint) FROM applied";
        Map<String, Shape> shapes = new LinkedHashMap<>();
        shapes.put("plain", (ids, values, token) -> handle.createUpdate(plain)
                .bind("ids", JdbcBenchmark.bigintArray(ids))
                .bind("counters", JdbcBenchmark.bigintArray(values))
                .execute());
        shapes.put(
                "fence",
                (ids, values, token) -> requireAll(handle.createUpdate(fence)
                        .bind("ids", JdbcBenchmark.bigintArray(ids))
                        .bind("counters", JdbcBenchmark.bigintArray(values))
                        .bind("token", token)
                        .execute()));
        shapes.put("fence + count", (ids, values, token) -> handle.createQuery(counted)
                .bind("ids", JdbcBenchmark.bigintArray(ids))
                .bind("counters", JdbcBenchmark.bigintArray(values))
                .bind("token", token)
                .mapTo(Long.class)
                .one());
        shapes.put("tryBatch", (ids, values, token) -> {
            FencedBatch.Builder builder = FencedBatch.builder(table).columns("counter");
            for (int i = 0; i < batch; i++) {
                builder.add(token, RowKey.of(ids[i]), values[i]);
            }
            requireAll((int) writer.tryBatch(handle, builder.build()).stream()
                    .filter(WriteOutcome::isApplied)
                    .count());
        });
        int backend = handle.createQuery("SELECT pg_backend_pid()")
                .mapTo(Integer.class)
                .one();
        Map<String, List<Double>> rates = new LinkedHashMap<>();
        Map<String, long[]> cpu = new LinkedHashMap<>(); // batches, client ns, server ns (-1: unknown)
        for (String name : shapes.keySet()) {
            rates.put(name, new ArrayList<>());
            cpu.put(name, new long[3]);
        }
        List<String> order = new ArrayList<>(shapes.keySet());
        for (int cycle = -1; cycle < cycles; cycle++) { // cycle -1 warms every shape up
            Collections.rotate(order, 1);
            for (String name : order) {
                Shape shape = shapes.get(name);
                long server = serverCpu(backend);
                long client = THREADS.getCurrentThreadCpuTime();
                long start = System.nanoTime();
                long deadline = start + roundMillis * 1_000_000L;
                long batches = 0;
                while (System.nanoTime() < deadline) {
                    long first = ThreadLocalRandom.current().nextLong(0, rows / batch) * batch + 1;
                    Long[] ids = new Long[batch];
                    Long[] values = new Long[batch];
                    for (int i = 0; i < batch; i++) {
                        ids[i] = first + i;
                        values[i] = first * 7 + i;
                    }
                    shape.write(ids, values, tokens.incrementAndGet());
                    batches++;
                }
                double seconds = (System.nanoTime() - start) / 1e9;
                long clientUsed = THREADS.getCurrentThreadCpuTime() - client;
                long serverNow = serverCpu(backend);
                if (cycle >= 0) {
                    rates.get(name).add(batches * batch / seconds);
                    long[] c = cpu.get(name);
                    c[0] += batches;
                    c[1] += clientUsed;
                    c[2] = server < 0 || serverNow < 0 || c[2] < 0 ? -1 : c[2] + serverNow - server;
                }
            }
        }
        double plainRate = AlternatingRuns.median(rates.get("plain"));
        out.println("batch shapes: one 1,000-row batch a statement, one connection, auto-commit; each shape adds one"
                + " part of tryBatch to the one above (median of " + cycles + " rounds each, rotating order)");
        out.println("| shape                 |  rows/s | ratio | client CPU ms/batch | server CPU ms/batch |");
        out.println("|-----------------------|---------|-------|---------------------|---------------------|");
        for (String name : shapes.keySet()) {
            double rate = AlternatingRuns.median(rates.get(name));
            long[] c = cpu.get(name);
            out.printf(
                    Locale.ROOT,
                    "| %-21s | %7.0f | %5.3f | %19.3f | %19s |%n",
                    name,
                    rate,
                    rate / plainRate,
                    c[1] / 1e6 / c[0],
                    c[2] < 0 ? "n/a" : String.format(Locale.ROOT, "%.3f", c[2] / 1e6 / c[0]));
        }
    }

    private void requireAll(int written) {
        if (written != batch) {
            throw new IllegalStateException("a shape wrote " + written + " of " + batch + " rows");
        }
    }

    /** The server process's CPU time so far, in ns; -1 when it cannot be read (a server on another machine). */
    private static long serverCpu(int pid) {
        try {
            return Long.parseLong(
                    Files.readString(Path.of("/proc/" + pid + "/schedstat")).split(" ")[0]);
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }
}
