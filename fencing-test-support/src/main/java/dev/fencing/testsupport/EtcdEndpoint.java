package dev.fencing.testsupport;

import java.util.List;

/**
 * An etcd cluster a test can connect to. Closing it stops what the tests started; an external cluster is left
 * alone.
 *
 * <pre>{@code
 * try (EtcdEndpoint etcd = EtcdServers.start()) {
 *     Client client = Client.builder().endpoints(etcd.endpoints().toArray(String[]::new)).build();
 *     ...
 * }
 * }</pre>
 */
public interface EtcdEndpoint extends AutoCloseable {

    /**
     * The client URLs of every member, {@code http://host:port}, as jetcd's {@code Client.builder().endpoints}
     * takes them. A member that a test has stopped stays in the list: a client given all of them fails over.
     */
    List<String> endpoints();

    /** Stops the cluster if the tests started it; an external cluster is left alone. */
    @Override
    void close();
}
