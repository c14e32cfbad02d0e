package dev.fencing.lock.etcd;

import dev.fencing.lock.Lease;
import io.etcd.jetcd.Client;
import java.time.Duration;
import java.util.List;

/**
 * This JVM as the holder that a {@link StaleHolder}'s lock passes to: a client of its own, with locks on the same
 * prefix and lease TTL. {@link #close()} closes the locks, then the client.
 */
final class NextHolder implements AutoCloseable {
    private final Client client;
    private final EtcdLocks locks;

    private NextHolder(Client client, EtcdLocks locks) {
        this.client = client;
        this.locks = locks;
    }

    static NextHolder connect(List<String> endpoints, String prefix, int ttlSeconds) {
        Client client =
                Client.builder().endpoints(endpoints.toArray(String[]::new)).build();
        try {
            return new NextHolder(
                    client,
                    EtcdLocks.builder(client)
                            .prefix(prefix)
                            .leaseTtl(Duration.ofSeconds(ttlSeconds))
                            .build());
        } catch (RuntimeException e) {
            client.close();
            throw e;
        }
    }

    /** The stale holder's lock, once etcd has expired its lease and deleted its key; fails after 30 s. */
    Lease takeOver() {
        return locks.lock(StaleHolderMain.LOCK)
                .tryAcquire(Duration.ofSeconds(30))
                .orElseThrow(() -> new AssertionError("etcd did not expire the stale holder's lease within 30 s"));
    }

    @Override
    public void close() {
        try {
            locks.close();
        } finally {
            client.close();
        }
    }
}
