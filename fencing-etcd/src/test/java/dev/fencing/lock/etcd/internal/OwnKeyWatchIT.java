package dev.fencing.lock.etcd.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencing.lock.FencedLock;
import dev.fencing.lock.FencedLockListener;
import dev.fencing.lock.Lease;
import dev.fencing.lock.etcd.internal.LeaseLossIT.RecordingListener;
import dev.fencing.testsupport.EtcdServers;
import dev.fencing.testsupport.TcpRelay;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.Watch;
import java.lang.reflect.Field;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * The watch on a holder's own key across dropped connections (through a {@link TcpRelay} in front of etcd): one
 * watch at a time, none left after the lease closes, and a holder cut off from etcd is told of its loss without
 * checking.
 */
class OwnKeyWatchIT {
    private final List<AutoCloseable> opened = new ArrayList<>();
    private final ExecutorService threads = Executors.newCachedThreadPool();
    private String prefix;

    @BeforeEach
    void start(TestInfo test) {
        prefix = "it/own-key-watch/" + test.getTestMethod().orElseThrow().getName() + "-" + System.nanoTime();
    }

    @AfterEach
    void stop() throws Exception {
        threads.shutdownNow();
        for (int i = opened.size() - 1; i >= 0; i--) {
            opened.get(i).close();
        }
    }

    @Test
    void ownKeyWatchesDoNotMultiplyOnStreamErrorsNorOutliveTheLease() throws Exception {
        TcpRelay relay = relayToSharedEtcd();
        Client client = client("http://127.0.0.1:" + relay.port());
        Lease lease = registry(client, Duration.ofSeconds(10), new FencedLockListener() {})
                .lock("watched")
                .acquire();
        EtcdHold hold = EtcdLockRegistry.holdOf(lease);
        assertThat(watchersOn(client, hold.keyBytes)).isEqualTo(1);

        for (int drop = 1; drop <= 3; drop++) {
            Watch.Watcher before = hold.ownKeyWatch;
            relay.dropConnections();
            // the failed watch is replaced; jetcd resumes a watcher it was not told to close 500 ms after the error
            await().atMost(Duration.ofSeconds(10)).until(() -> hold.ownKeyWatch != before);
            await().during(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertThat(
                            watchersOn(client, hold.keyBytes))
                    .as("live watches on the holder's key after a dropped connection")
                    .isEqualTo(1));
        }
        assertThat(lease.isValid()).isTrue();

        lease.close();

        await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertThat(watchersOn(client, hold.keyBytes))
                .as("watches on the key left after the lease closed")
                .isZero());
    }

    @Test
    void theListenerIsToldInTheBackgroundOnceTheKeepAliveDeadlinePasses() throws Exception {
        Duration ttl = Duration.ofSeconds(2);
        TcpRelay relay = relayToSharedEtcd();
        RecordingListener told = new RecordingListener();
        Lease lease = registry(client("http://127.0.0.1:" + relay.port()), ttl, told)
                .lock("cut")
                .acquire();
        FencedLock theirs = registry(client(EtcdServers.shared().endpoints().get(0)), ttl, new FencedLockListener() {})
                .lock("cut");

        relay.holdBack();
        relay.holdBackRequests();
        Future<Lease> next = threads.submit(theirs::acquire);
        Lease nextLease = next.get(30, TimeUnit.SECONDS); // the server expired our etcd lease

        // no call on the lease: only the background can notice
        await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertThat(told.causes)
                .as("the listener, told without a check after another holder was granted")
                .isNotEmpty());
        relay.dropConnections();
        lease.close();
        threads.submit(nextLease::close).get(10, TimeUnit.SECONDS);
    }

    private TcpRelay relayToSharedEtcd() {
        URI endpoint = URI.create(EtcdServers.shared().endpoints().get(0));
        TcpRelay relay = TcpRelay.to(endpoint.getPort());
        opened.add(relay);
        return relay;
    }

    private Client client(String endpoint) {
        Client client = EtcdTesting.client(List.of(endpoint));
        opened.add(client);
        return client;
    }

    private EtcdLockRegistry registry(Client client, Duration ttl, FencedLockListener listener) {
        EtcdLockRegistry registry = EtcdTesting.registry(client, prefix, ttl, listener);
        opened.add(registry);
        return registry;
    }

    /** Live (not closed) watchers on {@code key} in {@code client}'s watch client, read from jetcd's internals. */
    @SuppressWarnings("unchecked")
    private static long watchersOn(Client client, ByteSequence key) throws ReflectiveOperationException {
        Object watchClient = client.getWatchClient();
        Field watchersField = watchClient.getClass().getDeclaredField("watchers");
        watchersField.setAccessible(true);
        List<Object> watchers = List.copyOf((List<Object>) watchersField.get(watchClient));
        long count = 0;
        for (Object watcher : watchers) {
            Field keyField = watcher.getClass().getDeclaredField("key");
            keyField.setAccessible(true);
            Field closedField = watcher.getClass().getDeclaredField("closed");
            closedField.setAccessible(true);
            if (key.equals(keyField.get(watcher)) && !((AtomicBoolean) closedField.get(watcher)).get()) {
                count++;
            }
        }
        return count;
    }
}
