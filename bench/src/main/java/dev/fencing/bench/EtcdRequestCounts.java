package dev.fencing.bench;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What etcd itself counted for one side of a benchmark, from its {@code /metrics} page read around each round:
 * requests handled per gRPC method (unary calls, and streams opened for the streaming ones) and WAL fsyncs, per
 * operation. Round trips per acquire+release are read here rather than from the client's code.
 */
final class EtcdRequestCounts {
    private static final Pattern HANDLED = Pattern.compile(
            "^grpc_server_started_total\\{grpc_method=\"(\\w+)\",grpc_service=\"[\\w.]+\",grpc_type=\"\\w+\"} (\\S+)$");
    private static final Pattern FSYNCS = Pattern.compile("^etcd_disk_wal_fsync_duration_seconds_count (\\S+)$");
    private static final String FSYNC = "(WAL fsync)";

    private final String metricsUrl;
    private final Map<String, Double> totals = new TreeMap<>();
    private long ops;

    EtcdRequestCounts(String clientUrl) {
        this.metricsUrl = clientUrl + "/metrics";
    }

    /** Runs one round, adding what the server counted during it and its operations to this side's totals. */
    double count(int roundOps, AlternatingRuns.Round round) throws Exception {
        Map<String, Double> before = read();
        double rate = round.opsPerSecond();
        Map<String, Double> after = read();
        after.forEach((name, value) -> totals.merge(name, value - before.getOrDefault(name, 0.0), Double::sum));
        ops += roundOps;
        return rate;
    }

    /** One line: the methods etcd handled per operation, over every round counted. */
    void print(PrintStream out, String side) {
        StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "  %-7s per acquire+release:", side));
        totals.forEach((name, total) -> {
            double perOp = total / ops;
            if (perOp >= 0.005) {
                line.append(String.format(Locale.ROOT, " %s %.2f", name, perOp));
            }
        });
        out.println(line);
    }

    private Map<String, Double> read() {
        Map<String, Double> counts = new LinkedHashMap<>();
        try {
            HttpURLConnection connection =
                    (HttpURLConnection) URI.create(metricsUrl).toURL().openConnection();
            connection.setConnectTimeout(2_000);
            connection.setReadTimeout(5_000);
            try (InputStream in = connection.getInputStream()) {
                for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
                    Matcher handled = HANDLED.matcher(line);
                    if (handled.matches()) {
                        counts.merge(handled.group(1), Double.parseDouble(handled.group(2)), Double::sum);
                        continue;
                    }
                    Matcher fsyncs = FSYNCS.matcher(line);
                    if (fsyncs.matches()) {
                        counts.put(FSYNC, Double.parseDouble(fsyncs.group(1)));
                    }
                }
            } finally {
                connection.disconnect();
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read etcd's metrics at " + metricsUrl, e);
        }
        return counts;
    }
}
