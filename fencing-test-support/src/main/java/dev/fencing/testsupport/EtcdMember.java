package dev.fencing.testsupport;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.HttpURLConnection;
import java.net.Proxy;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One member of an {@link EmbeddedEtcdCluster}: a real etcd server run as a child process, with a client port, a
 * peer port and a data directory of its own. A test stops, kills and starts it again to force leader elections.
 *
 * <pre>{@code
 * EtcdMember leader = cluster.awaitLeader(Duration.ofSeconds(10));
 * leader.kill();   // SIGKILL: a crash
 * ...              // the other two elect a new leader; writes go on
 * leader.start();  // same ports, same data directory: it rejoins as a follower
 * }</pre>
 *
 * {@link #stop()} is a clean shutdown (SIGTERM: a leader hands its leadership over first), {@link #kill()} a
 * crash. {@link #start()} returns once the member reports itself healthy, which needs a quorum of the cluster
 * running. Thread-safe.
 */
public final class EtcdMember {
    private static final Pattern MEMBER_ID = Pattern.compile("\"member_id\":\"(\\d+)\"");
    private static final Pattern LEADER = Pattern.compile("\"leader\":\"(\\d+)\"");
    private static final Pattern RAFT_TERM = Pattern.compile("\"raftTerm\":\"(\\d+)\"");
    private static final int HTTP_TIMEOUT_MILLIS = 1_000;
    private static final int LOG_LINES = 15;

    private final String name;
    private final String host;
    private final int clientPort;
    private final int peerPort;
    private final Path directory;
    private final List<String> command;
    private final Duration startTimeout;
    private Process process;
    private boolean closed;

    EtcdMember(
            String name,
            String host,
            int clientPort,
            int peerPort,
            Path directory,
            Path binary,
            List<String> clusterArguments,
            Duration startTimeout) {
        this.name = name;
        this.host = host;
        this.clientPort = clientPort;
        this.peerPort = peerPort;
        this.directory = directory;
        this.startTimeout = startTimeout;
        List<String> command = new ArrayList<>();
        command.add(binary.toString());
        command.addAll(List.of(
                "--name", name,
                "--data-dir", dataDirectory().toString(),
                "--listen-client-urls", clientUrl(),
                "--advertise-client-urls", clientUrl(),
                "--listen-peer-urls", peerUrl(),
                "--initial-advertise-peer-urls", peerUrl()));
        command.addAll(clusterArguments);
        this.command = List.copyOf(command);
    }

    /** The member's name in the cluster ({@code etcd1}, {@code etcd2}, ...). */
    public String name() {
        return name;
    }

    /** {@code http://host:clientPort}, the endpoint a client connects to. */
    public String clientUrl() {
        return "http://" + host + ":" + clientPort;
    }

    /** {@code http://host:peerPort}, where the other members reach this one. */
    public String peerUrl() {
        return "http://" + host + ":" + peerPort;
    }

    /** The member's data directory: it survives {@link #stop()} and {@link #kill()}, not the cluster's close. */
    public Path dataDirectory() {
        return directory.resolve("data");
    }

    /** The server's log (standard output and error of every run, appended). */
    public Path logFile() {
        return directory.resolve("etcd.log");
    }

    /** The server process's id, for example to freeze it with {@link ProcessFreezer}. */
    public synchronized long pid() {
        if (!isRunning()) {
            throw new IllegalStateException(this + " is not running");
        }
        return process.pid();
    }

    public synchronized boolean isRunning() {
        return process != null && process.isAlive();
    }

    /** Whether the member answers its {@code /health} endpoint with {@code true} now (it has a leader). */
    public boolean isHealthy() {
        return get("/health").map(body -> body.contains("\"health\":\"true\"")).orElse(false);
    }

    /** Whether the member reports that it is the cluster's leader now. */
    public boolean isLeader() {
        return status().map(s -> s.memberId() == s.leaderId()).orElse(false);
    }

    /**
     * Starts the member again after {@link #stop()} or {@link #kill()}, with the same ports and data directory,
     * and waits until it is healthy.
     *
     * @throws IllegalStateException if it is running or closed, or does not become healthy within the cluster's
     *     start timeout (for example because no quorum of the cluster runs); the message quotes its log
     */
    public synchronized void start() {
        if (closed) {
            throw new IllegalStateException(this + " is closed");
        }
        if (isRunning()) {
            throw new IllegalStateException(this + " is already running");
        }
        launch();
        awaitHealthy(System.nanoTime() + startTimeout.toNanos());
    }

    /** A clean shutdown (SIGTERM); returns once the process is gone. */
    public synchronized void stop() {
        if (process == null) {
            return;
        }
        process.destroy();
        awaitExit(process);
        process = null;
    }

    /** A crash (SIGKILL); returns once the process is gone. */
    public synchronized void kill() {
        if (process == null) {
            return;
        }
        process.destroyForcibly();
        awaitExit(process);
        process = null;
    }

    @Override
    public String toString() {
        return "etcd member " + name + " at " + clientUrl();
    }

    /** Spawns the process without waiting for it to serve. */
    synchronized void launch() {
        ProcessBuilder builder = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile().toFile()));
        // etcd reads ETCD_<FLAG> variables too; a stray one from the user's shell must not change the member.
        // ETCD_UNSUPPORTED_ARCH stays: etcd 3.4 refuses to start on arm64 without it.
        builder.environment().keySet().removeIf(key -> key.startsWith("ETCD_") && !key.equals("ETCD_UNSUPPORTED_ARCH"));
        try {
            Files.createDirectories(directory);
            process = builder.start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + this + " (" + command.get(0) + ")", e);
        }
    }

    /** Waits until the member is healthy; fails with its last log lines if it exits or the deadline passes. */
    void awaitHealthy(long deadlineNanos) {
        while (!isHealthy()) {
            Process current;
            synchronized (this) {
                current = process;
            }
            if (current == null || !current.isAlive()) {
                String exit = current == null ? "was stopped" : "exited with status " + current.exitValue();
                throw new IllegalStateException(this + " " + exit + "; the end of its log: " + lastLogLines());
            }
            if (System.nanoTime() > deadlineNanos) {
                throw new IllegalStateException(this + " did not become healthy within " + startTimeout.toMillis()
                        + " ms; the end of its log: " + lastLogLines());
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for " + this, e);
            }
        }
    }

    /** For the cluster's close and shutdown hook: SIGKILL, no questions; the data is thrown away anyway. */
    synchronized void destroy() {
        closed = true;
        if (process != null) {
            process.destroyForcibly();
            awaitExit(process);
            process = null;
        }
    }

    /** The raft term this member reports, if it answers. */
    OptionalLong raftTerm() {
        return status().map(s -> OptionalLong.of(s.raftTerm())).orElse(OptionalLong.empty());
    }

    String lastLogLines() {
        try {
            List<String> lines = Files.readAllLines(logFile(), StandardCharsets.UTF_8);
            return String.join(" | ", lines.subList(Math.max(0, lines.size() - LOG_LINES), lines.size()));
        } catch (IOException | UncheckedIOException e) {
            return "(cannot read " + logFile() + ": " + e + ")";
        }
    }

    private record Status(long memberId, long leaderId, long raftTerm) {}

    /** The member's view from the gRPC gateway's {@code /v3/maintenance/status}. */
    private Optional<Status> status() {
        return post("/v3/maintenance/status", "{}").flatMap(body -> {
            Matcher member = MEMBER_ID.matcher(body);
            Matcher leader = LEADER.matcher(body);
            Matcher term = RAFT_TERM.matcher(body);
            if (!member.find() || !leader.find() || !term.find()) {
                return Optional.empty();
            }
            // uint64 ids: parseUnsignedLong keeps them distinct even above Long.MAX_VALUE
            return Optional.of(new Status(
                    Long.parseUnsignedLong(member.group(1)),
                    Long.parseUnsignedLong(leader.group(1)),
                    Long.parseUnsignedLong(term.group(1))));
        });
    }

    private Optional<String> get(String path) {
        return request("GET", path, null);
    }

    private Optional<String> post(String path, String body) {
        return request("POST", path, body);
    }

    /** The body of a 200 answer, or empty when the member does not answer (down, starting, frozen). */
    private Optional<String> request(String method, String path, String body) {
        HttpURLConnection connection = null;
        try {
            // never through a proxy: the member is on this host (maybe on an address no proxy exclusion names)
            connection =
                    (HttpURLConnection) URI.create(clientUrl() + path).toURL().openConnection(Proxy.NO_PROXY);
            connection.setConnectTimeout(HTTP_TIMEOUT_MILLIS);
            connection.setReadTimeout(HTTP_TIMEOUT_MILLIS);
            connection.setRequestMethod(method);
            if (body != null) {
                connection.setDoOutput(true);
                connection.setRequestProperty("Content-Type", "application/json");
                try (OutputStream out = connection.getOutputStream()) {
                    out.write(body.getBytes(StandardCharsets.UTF_8));
                }
            }
            if (connection.getResponseCode() != HttpURLConnection.HTTP_OK) {
                return Optional.empty();
            }
            try (InputStream in = connection.getInputStream()) {
                return Optional.of(new String(in.readAllBytes(), StandardCharsets.UTF_8));
            }
        } catch (IOException e) {
            return Optional.empty();
        } finally {
            if (connection != null) {
                connection.disconnect();
            }
        }
    }

    private static void awaitExit(Process process) {
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
        }
    }
}
