package dev.fencing.testsupport;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Comparator;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import redis.embedded.core.ExecutableProvider;

/**
 * A real Redis server run as a child process from the binary that {@code
 * com.github.codemonstur:embedded-redis} ships inside its jar (Redis 6.2 for Linux and macOS; no Docker,
 * nothing installed). It listens on {@code 127.0.0.1} on a free port and keeps its files in a directory of
 * its own, deleted on {@link #close()}. Starts in a few milliseconds.
 *
 * <pre>{@code
 * try (EmbeddedRedisServer redis = EmbeddedRedisServer.builder()
 *         .appendOnly(EmbeddedRedisServer.AppendFsync.ALWAYS).build()) {
 *     ... write ...
 *     redis.kill();      // SIGKILL: what Redis had not written to disk is lost
 *     redis.start();     // same port, same directory: the append-only file is replayed
 * }
 * }</pre>
 *
 * <p>By default nothing is persisted (no append-only file, no RDB snapshots): a restart starts empty.
 * {@link Builder#appendOnly} turns on the append-only file with the chosen {@code appendfsync}. {@link
 * #stop()} is a clean shutdown (SIGTERM: Redis flushes its append-only file), {@link #kill()} a crash.
 * Thread-safe.
 */
public final class EmbeddedRedisServer implements RedisEndpoint {
    private static final String READY = "Ready to accept connections";
    private static final int PORT_ATTEMPTS = 5;
    private static Path executable;

    private final Path directory;
    private final Map<String, String> config;
    private final Deque<String> lastLines = new ArrayDeque<>();
    private final Thread reaper = new Thread(this::destroyQuietly, "fencing-redis-reaper");
    private int port;
    private Process process;
    private boolean closed;

    /** What {@code appendfsync} the append-only file uses, as in {@code redis.conf}. */
    public enum AppendFsync {
        /** fsync after every write, before the reply: an acknowledged write survives a crash. */
        ALWAYS,
        /** fsync once a second: a crash loses up to about a second of acknowledged writes. */
        EVERYSEC,
        /** leave it to the operating system. */
        NO
    }

    private EmbeddedRedisServer(Builder builder) {
        this.config = new LinkedHashMap<>(builder.config);
        try {
            this.directory = Files.createTempDirectory("fencing-redis");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create a directory for embedded Redis", e);
        }
        Runtime.getRuntime().addShutdownHook(reaper);
        try {
            startOnSomeFreePort();
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    public static Builder builder() {
        return new Builder();
    }

    @Override
    public String uri() {
        return "redis://127.0.0.1:" + port;
    }

    public int port() {
        return port;
    }

    /** The directory holding the server's configuration and its append-only file. */
    public Path directory() {
        return directory;
    }

    /** The server process's id, for example to freeze it with {@link ProcessFreezer}. */
    public synchronized long pid() {
        if (process == null || !process.isAlive()) {
            throw new IllegalStateException("embedded Redis on port " + port + " is not running");
        }
        return process.pid();
    }

    public synchronized boolean isRunning() {
        return process != null && process.isAlive();
    }

    /** Starts the server again after {@link #stop()} or {@link #kill()}, on the same port and directory. */
    public synchronized void start() {
        if (closed) {
            throw new IllegalStateException("embedded Redis on port " + port + " is closed");
        }
        if (isRunning()) {
            throw new IllegalStateException("embedded Redis on port " + port + " is already running");
        }
        // the old port may linger briefly in the kernel after a kill; only the same port will do here
        String failure = null;
        for (int attempt = 0; attempt < PORT_ATTEMPTS; attempt++) {
            failure = tryStart(port);
            if (failure == null) {
                return;
            }
            if (!failure.contains("Address already in use")) {
                break;
            }
        }
        throw new IllegalStateException("embedded Redis did not restart on port " + port + ": " + failure);
    }

    /** A clean shutdown (SIGTERM): Redis flushes its append-only file and exits. */
    public synchronized void stop() {
        if (process == null) {
            return;
        }
        process.destroy();
        awaitExit(process, 10);
        process = null;
    }

    /** A crash (SIGKILL): whatever Redis had not written to disk is lost. */
    public synchronized void kill() {
        if (process == null) {
            return;
        }
        process.destroyForcibly();
        awaitExit(process, 10);
        process = null;
    }

    /** Stops the server and deletes its directory. Safe to call twice. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        stop();
        try {
            Runtime.getRuntime().removeShutdownHook(reaper);
        } catch (IllegalStateException alreadyShuttingDown) {
            // the hook runs anyway
        }
        deleteDirectory();
    }

    @Override
    public String toString() {
        return "embedded Redis on port " + port;
    }

    private void startOnSomeFreePort() {
        String failure = null;
        for (int attempt = 0; attempt < PORT_ATTEMPTS; attempt++) {
            int candidate = freePort();
            failure = tryStart(candidate);
            if (failure == null) {
                return;
            }
            if (!failure.contains("Address already in use")) {
                break;
            }
        }
        throw new IllegalStateException("embedded Redis did not start: " + failure);
    }

    /** Starts the server on {@code candidate}; returns {@code null} once it is ready, else why it failed. */
    private String tryStart(int candidate) {
        this.port = candidate;
        Path conf = directory.resolve("redis.conf");
        StringBuilder text = new StringBuilder();
        text.append("port ").append(candidate).append('\n');
        text.append("dir ").append(directory.toAbsolutePath()).append('\n');
        config.forEach(
                (name, value) -> text.append(name).append(' ').append(value).append('\n'));
        Process started;
        try {
            Files.writeString(conf, text);
            started = new ProcessBuilder(executable().toString(), conf.toString())
                    .redirectErrorStream(true)
                    .start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start embedded Redis in " + directory, e);
        }
        CountDownLatch ready = new CountDownLatch(1);
        Thread drain = new Thread(() -> drain(started, ready), "fencing-redis-" + candidate + "-output");
        drain.setDaemon(true);
        drain.start();
        try {
            while (!ready.await(50, TimeUnit.MILLISECONDS)) {
                if (!started.isAlive()) {
                    drain.join(1_000);
                    return "exited with status " + started.exitValue() + "; its last lines: " + lastLines();
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            started.destroyForcibly();
            throw new IllegalStateException("interrupted while embedded Redis started", e);
        }
        this.process = started;
        return null;
    }

    /** Reads the server's log (it logs to standard output) so that its pipe never fills up. */
    private void drain(Process started, CountDownLatch ready) {
        try (BufferedReader reader =
                new BufferedReader(new InputStreamReader(started.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = reader.readLine()) != null) {
                synchronized (lastLines) {
                    if (lastLines.size() == 20) {
                        lastLines.removeFirst();
                    }
                    lastLines.addLast(line);
                }
                if (line.contains(READY)) {
                    ready.countDown();
                }
            }
        } catch (IOException e) {
            // the process is gone; its exit status tells the rest
        }
    }

    private String lastLines() {
        synchronized (lastLines) {
            return String.join(" | ", lastLines);
        }
    }

    private static void awaitExit(Process process, int seconds) {
        try {
            if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(seconds, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
        }
    }

    private synchronized void destroyQuietly() {
        if (process != null) {
            process.destroyForcibly();
        }
    }

    private void deleteDirectory() {
        try (Stream<Path> files = Files.walk(directory)) {
            files.sorted(Comparator.reverseOrder())
                    .forEach(path -> path.toFile().delete());
        } catch (IOException e) {
            // a temporary directory left behind is not worth failing a test for
        }
    }

    private static int freePort() {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException("no free port for embedded Redis", e);
        }
    }

    /** The server binary, copied out of the embedded-redis jar once per JVM. */
    private static synchronized Path executable() throws IOException {
        if (executable == null) {
            executable = ExecutableProvider.newJarResourceProvider().get().toPath();
        }
        return executable;
    }

    /** Options for an {@link EmbeddedRedisServer}; every setter checks its value. */
    public static final class Builder {
        private final Map<String, String> config = new LinkedHashMap<>();

        private Builder() {
            config.put("bind", "127.0.0.1");
            config.put("daemonize", "no");
            config.put("logfile", "\"\"");
            config.put("save", "\"\"");
            config.put("appendonly", "no");
        }

        /**
         * Turns on the append-only file with this {@code appendfsync}, so that a restart (even after {@link
         * #kill()}, with {@link AppendFsync#ALWAYS}) finds what was acknowledged. Default: off.
         */
        public Builder appendOnly(AppendFsync fsync) {
            Objects.requireNonNull(fsync, "fsync");
            config.put("appendonly", "yes");
            config.put("appendfsync", fsync.name().toLowerCase(Locale.ROOT));
            return this;
        }

        /** Any other {@code redis.conf} directive, for example {@code ("maxmemory", "64mb")}. */
        public Builder setting(String name, String value) {
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(value, "value");
            if (!name.matches("[a-z][a-z0-9-]*")) {
                throw new IllegalArgumentException("not a redis.conf directive: '" + name + "'");
            }
            if (name.equals("port") || name.equals("dir")) {
                throw new IllegalArgumentException("'" + name + "' is chosen by the server itself");
            }
            if (value.contains("\n")) {
                throw new IllegalArgumentException("a redis.conf value is one line, got '" + value + "'");
            }
            config.put(name, value);
            return this;
        }

        public EmbeddedRedisServer build() {
            return new EmbeddedRedisServer(this);
        }
    }
}
