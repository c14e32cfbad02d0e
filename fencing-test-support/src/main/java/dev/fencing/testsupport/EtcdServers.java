package dev.fencing.testsupport;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Entry point for etcd in tests and benchmarks: the cluster named by {@value #ENDPOINTS_ENV} when it is set, a
 * container when {@link ServerSource#MODE_ENV} asks for one, otherwise a real etcd member started as a child
 * process ({@link EmbeddedEtcdCluster}; {@link EtcdBinary} says where its binary comes from).
 *
 * <pre>{@code
 * EtcdEndpoint etcd = EtcdServers.shared();              // one member per test JVM
 * Client client = Client.builder().endpoints(etcd.endpoints().toArray(String[]::new)).build();
 *
 * try (EmbeddedEtcdCluster cluster = EtcdServers.startCluster(3)) {   // members a test may kill
 *     cluster.awaitLeader(Duration.ofSeconds(10)).kill();
 * }
 * }</pre>
 *
 * Tests sharing a server use keys of their own (a random prefix).
 */
public final class EtcdServers {
    /** Client URLs of an external cluster, comma-separated, for example {@code http://etcd1:2379,http://etcd2:2379}. */
    public static final String ENDPOINTS_ENV = "FENCING_ETCD_ENDPOINTS";

    private static EtcdEndpoint shared;

    private EtcdServers() {}

    /** A cluster of its own (one member unless external), which the caller closes. */
    public static EtcdEndpoint start() {
        return start(System.getenv());
    }

    static EtcdEndpoint start(Map<String, String> env) {
        switch (ServerSource.choose(env, ENDPOINTS_ENV)) {
            case EXTERNAL:
                return external(env.get(ENDPOINTS_ENV));
            case TESTCONTAINERS:
                return ContainerEtcd.start();
            default:
                return EmbeddedEtcdCluster.start(1);
        }
    }

    /**
     * A cluster of {@code members} embedded members, always started here (never the external one), for tests
     * that stop, kill and restart members. The caller closes it.
     */
    public static EmbeddedEtcdCluster startCluster(int members) {
        return EmbeddedEtcdCluster.start(members);
    }

    /**
     * One cluster for the whole JVM, started on first use and stopped when the JVM exits; closing it does
     * nothing.
     */
    public static synchronized EtcdEndpoint shared() {
        if (shared == null) {
            EtcdEndpoint server = start();
            Runtime.getRuntime().addShutdownHook(new Thread(server::close, "fencing-etcd-shutdown"));
            List<String> endpoints = server.endpoints();
            shared = new EtcdEndpoint() {
                @Override
                public List<String> endpoints() {
                    return endpoints;
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

    /**
     * The external cluster named by {@code value}.
     *
     * @throws IllegalArgumentException if an endpoint is not {@code http(s)://host:port}; the message names it
     */
    static EtcdEndpoint external(String value) {
        List<String> endpoints = new ArrayList<>();
        for (String part : value.split(",")) {
            String endpoint = part.trim();
            if (endpoint.isEmpty()) {
                continue;
            }
            try {
                URI uri = new URI(endpoint);
                boolean http = "http".equals(uri.getScheme()) || "https".equals(uri.getScheme());
                if (!http || uri.getHost() == null || uri.getPort() < 0) {
                    throw new URISyntaxException(endpoint, "not http(s)://host:port");
                }
            } catch (URISyntaxException e) {
                throw new IllegalArgumentException(
                        ENDPOINTS_ENV + " holds '" + endpoint + "', which is not http(s)://host:port", e);
            }
            endpoints.add(endpoint);
        }
        if (endpoints.isEmpty()) {
            throw new IllegalArgumentException(ENDPOINTS_ENV + " names no endpoint: '" + value + "'");
        }
        List<String> fixed = List.copyOf(endpoints);
        return new EtcdEndpoint() {
            @Override
            public List<String> endpoints() {
                return fixed;
            }

            @Override
            public void close() {}

            @Override
            public String toString() {
                return "external etcd " + fixed;
            }
        };
    }
}
