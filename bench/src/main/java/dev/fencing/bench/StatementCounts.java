package dev.fencing.bench;

import java.io.PrintStream;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import javax.sql.DataSource;

/**
 * Counts, per SQL text, the statements sent through a {@link DataSource} and the rows they carried in JDBC
 * batches, plus the connection calls that may cost a round trip (commit, isolation level). For the
 * diagnostic pass of {@link KafkaPostgresBenchmark} only: the proxies cost time, so no timed round uses it.
 * Also sums the wall time of each kind of call, which on a durable server puts the commit's flush under
 * {@code commit()}.
 */
final class StatementCounts {
    private final Map<String, LongAdder> counts = new ConcurrentHashMap<>();
    private final Map<String, LongAdder> nanos = new ConcurrentHashMap<>();

    /** {@code target} with every connection and statement counted. */
    DataSource wrap(DataSource target) {
        return proxy(DataSource.class, target, (method, args, result, elapsed) -> {
            if (method.getName().equals("getConnection")) {
                count("getConnection (pool)");
                return proxy(Connection.class, result, this::onConnection);
            }
            return result;
        });
    }

    /** Prints each counted call per unit of work, the unit being one {@code commit()}. */
    void print(PrintStream out, String side, long records) {
        long units = get("commit()");
        out.printf(
                Locale.ROOT,
                "%s: %,d records in %,d units (%.0f records/unit)%n",
                side,
                records,
                units,
                records / (double) Math.max(units, 1));
        Map<String, LongAdder> sorted = new TreeMap<>(counts);
        sorted.forEach((what, n) -> {
            LongAdder spent = nanos.get(what);
            String time = spent == null
                    ? ""
                    : String.format(Locale.ROOT, " %8.2f ms/unit", spent.sum() / 1e6 / Math.max(units, 1));
            out.printf(Locale.ROOT, "  %9.2f per unit%s  %s%n", n.sum() / (double) Math.max(units, 1), time, what);
        });
    }

    /**
     * Prints each counted call per record, then the calls that cost a round trip to the server (statements
     * executed, commits, rollbacks, isolation calls) per record.
     */
    void printPerRecord(PrintStream out, String side, long records) {
        long units = get("commit()");
        out.printf(
                Locale.ROOT,
                "%s: %,d records, %,d commits (%.1f records per commit)%n",
                side,
                records,
                units,
                records / (double) Math.max(units, 1));
        double trips = 0;
        for (Map.Entry<String, LongAdder> e : new TreeMap<>(counts).entrySet()) {
            String what = e.getKey();
            double n = e.getValue().sum() / (double) Math.max(records, 1);
            out.printf(Locale.ROOT, "  %7.3f per record  %s%n", n, what);
            if (what.startsWith("execute")
                    || what.equals("commit()")
                    || what.equals("rollback()")
                    || what.endsWith("TransactionIsolation()")) {
                trips += n;
            }
        }
        out.printf(Locale.ROOT, "  %7.3f round trips per record (statements, commits, rollbacks, isolation)%n", trips);
    }

    long get(String what) {
        LongAdder n = counts.get(what);
        return n == null ? 0 : n.sum();
    }

    private Object onConnection(Method method, Object[] args, Object result, long elapsed) {
        String name = method.getName();
        switch (name) {
            case "commit", "rollback", "setTransactionIsolation", "getTransactionIsolation", "setAutoCommit" ->
                count(name + "()", elapsed);
            case "prepareStatement" -> {
                String sql = (String) args[0];
                return proxy(PreparedStatement.class, result, (m, a, r, t) -> onStatement(sql, m, r, t));
            }
            case "createStatement" -> {
                return proxy(Statement.class, result, (m, a, r, t) -> {
                    if (m.getName().startsWith("execute") && a != null && a.length > 0 && a[0] instanceof String s) {
                        count("execute: " + brief(s), t);
                    }
                    return r;
                });
            }
            default -> {}
        }
        return result;
    }

    private Object onStatement(String sql, Method method, Object result, long elapsed) {
        String name = method.getName();
        if (name.equals("addBatch")) {
            count("  batched rows of: " + brief(sql));
        } else if (name.startsWith("execute")) {
            count(name + ": " + brief(sql), elapsed);
        }
        return result;
    }

    private void count(String what) {
        counts.computeIfAbsent(what, w -> new LongAdder()).increment();
    }

    private void count(String what, long elapsed) {
        count(what);
        nanos.computeIfAbsent(what, w -> new LongAdder()).add(elapsed);
    }

    private static String brief(String sql) {
        String flat = sql.replaceAll("\\s+", " ").trim();
        return flat.length() <= 70 ? flat : flat.substring(0, 70) + "...";
    }

    /** Called after the real method returned {@code result}; returns what the caller gets. */
    @FunctionalInterface
    private interface AfterCall {
        Object after(Method method, Object[] args, Object result, long elapsedNanos) throws Exception;
    }

    private static <T> T proxy(Class<T> type, Object target, AfterCall after) {
        InvocationHandler handler = (proxy, method, args) -> {
            if (method.getName().equals("unwrap") || method.getName().equals("isWrapperFor")) {
                return method.invoke(target, args);
            }
            Object result;
            long start = System.nanoTime();
            try {
                result = method.invoke(target, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
            return after.after(method, args, result, System.nanoTime() - start);
        };
        return type.cast(
                Proxy.newProxyInstance(StatementCounts.class.getClassLoader(), new Class<?>[] {type}, handler));
    }
}
