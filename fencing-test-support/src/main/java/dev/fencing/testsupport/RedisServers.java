package dev.fencing.testsupport;

/**
 * Entry point for Redis in tests and benchmarks: the server named by {@value #URL_ENV} when it is set, a
 * container when {@link ServerSource#MODE_ENV} asks for one, otherwise a real Redis started as a child
 * process from the binary that {@code com.github.codemonstur:embedded-redis} ships ({@link
 * EmbeddedRedisServer}).
 *
 * <pre>{@code
 * RedisEndpoint redis = RedisServers.shared();          // one server per test JVM
 * RedisClient client = RedisClient.create(redis.uri());
 * }</pre>
 *
 * Tests sharing a server use keys of their own (a random prefix); tests that restart or kill the server
 * use {@link EmbeddedRedisServer} directly.
 */
public final class RedisServers {
    /** URI of an external server, for example {@code redis://cache:6379/0}. */
    public static final String URL_ENV = "FENCING_REDIS_URL";

    private static RedisEndpoint shared;

    private RedisServers() {}

    /** A server of its own, which the caller closes. */
    public static RedisEndpoint start() {
        switch (ServerSource.choose(URL_ENV)) {
            case EXTERNAL:
                String uri = System.getenv(URL_ENV).trim();
                return new RedisEndpoint() {
                    @Override
                    public String uri() {
                        return uri;
                    }

                    @Override
                    public void close() {}

                    @Override
                    public String toString() {
                        return "external Redis " + uri;
                    }
                };
            case TESTCONTAINERS:
                return ContainerRedis.start();
            default:
                return EmbeddedRedisServer.builder().build();
        }
    }

    /**
     * One server for the whole JVM, started on first use and stopped when the JVM exits; closing it does
     * nothing.
     */
    public static synchronized RedisEndpoint shared() {
        if (shared == null) {
            RedisEndpoint server = start();
            Runtime.getRuntime().addShutdownHook(new Thread(server::close, "fencing-redis-shutdown"));
            shared = new RedisEndpoint() {
                @Override
                public String uri() {
                    return server.uri();
                }

                @Override
                public void close() {}

                @Override
                public String toString() {
                    return "shared " + server;
                }
            };
        }
        return shared;
    }
}
