package dev.fencing.testsupport;

/**
 * Entry point for PostgreSQL in tests and benchmarks: the server named by {@value #URL_ENV} when it is
 * set, a container when {@link ServerSource#MODE_ENV} asks for one, otherwise a real embedded server
 * ({@link EmbeddedPostgresServer}).
 *
 * <pre>{@code
 * // one server per test JVM, one fresh database per test class
 * PostgresEndpoint db = PostgresServers.shared().createDatabase("fenced_jdbc_it");
 * Jdbi jdbi = Jdbi.create(db.dataSource());
 * ...
 * db.close(); // drops the database
 * }</pre>
 */
public final class PostgresServers {
    /** JDBC URL of an external server, for example {@code jdbc:postgresql://db:5432/fencing}. */
    public static final String URL_ENV = "FENCING_POSTGRES_URL";
    /** User for {@value #URL_ENV}; default {@code postgres}. */
    public static final String USER_ENV = "FENCING_POSTGRES_USER";
    /** Password for {@value #URL_ENV}; default none. */
    public static final String PASSWORD_ENV = "FENCING_POSTGRES_PASSWORD";

    private static PostgresEndpoint shared;

    private PostgresServers() {}

    /** A server of its own, which the caller closes. */
    public static PostgresEndpoint start() {
        return start(false);
    }

    /**
     * Like {@link #start()}; {@code durable} asks an embedded server to commit to disk as a production
     * server does (for benchmarks). An external or container server is used as it is configured.
     */
    public static PostgresEndpoint start(boolean durable) {
        switch (ServerSource.choose(URL_ENV)) {
            case EXTERNAL:
                return external();
            case TESTCONTAINERS:
                return ContainerPostgres.start();
            default:
                return EmbeddedPostgresServer.builder().durable(durable).build();
        }
    }

    /**
     * One server for the whole JVM, started on first use and stopped when the JVM exits; closing it does
     * nothing. Test classes take a database of their own with {@link PostgresEndpoint#createDatabase}.
     */
    public static synchronized PostgresEndpoint shared() {
        if (shared == null) {
            PostgresEndpoint server = start();
            Runtime.getRuntime().addShutdownHook(new Thread(server::close, "fencing-postgres-shutdown"));
            shared = new PostgresEndpoints.Fixed(
                    server.jdbcUrl(), server.user(), server.password(), "shared " + server, () -> {});
        }
        return shared;
    }

    private static PostgresEndpoint external() {
        String url = System.getenv(URL_ENV).trim();
        String user = System.getenv().getOrDefault(USER_ENV, "postgres");
        String password = System.getenv().getOrDefault(PASSWORD_ENV, "");
        return new PostgresEndpoints.Fixed(url, user, password, "external PostgreSQL " + url, () -> {});
    }
}
