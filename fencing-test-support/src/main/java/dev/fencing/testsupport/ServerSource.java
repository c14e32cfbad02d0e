package dev.fencing.testsupport;

import java.util.Locale;
import java.util.Map;

/**
 * Where a test gets a server from.
 *
 * <p>Each kind of server (ZooKeeper, PostgreSQL, Kafka, Redis, etcd) is chosen the same way:
 *
 * <ol>
 *   <li>its own environment variable names an external server (for example {@value
 *       ZooKeeperServers#CONNECT_ENV}): that server is used and never stopped by the tests;
 *   <li>otherwise {@value #MODE_ENV}{@code =testcontainers} starts it in a container, which needs a
 *       Docker engine ({@code auto} does so only when an engine answers);
 *   <li>otherwise (the default) a real server is started in this JVM or as a child process.
 * </ol>
 *
 * Embedded is the default because it needs nothing installed and because the fault tests (server
 * restarts, frozen processes) need servers they control.
 */
public enum ServerSource {
    EMBEDDED,
    EXTERNAL,
    TESTCONTAINERS;

    /** Environment variable choosing between embedded servers and containers. */
    public static final String MODE_ENV = "FENCING_TEST_SERVERS";

    /**
     * Decides the source for one kind of server.
     *
     * @param externalVariable the environment variable that names an external server of this kind
     */
    public static ServerSource choose(String externalVariable) {
        return choose(System.getenv(), externalVariable);
    }

    static ServerSource choose(Map<String, String> env, String externalVariable) {
        String external = env.get(externalVariable);
        if (external != null && !external.isBlank()) {
            return EXTERNAL;
        }
        String mode = env.getOrDefault(MODE_ENV, "embedded").trim().toLowerCase(Locale.ROOT);
        switch (mode) {
            case "", "embedded":
                return EMBEDDED;
            case "testcontainers":
                return TESTCONTAINERS;
            case "auto":
                return DockerProbe.engineAnswers() ? TESTCONTAINERS : EMBEDDED;
            default:
                throw new IllegalArgumentException(
                        MODE_ENV + "='" + mode + "' is not one of embedded, testcontainers, auto");
        }
    }
}
