package dev.fencing.lock.etcd.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fencing.lock.FencedLock;
import dev.fencing.lock.FencedLockListener;
import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.etcd.internal.LeaseLossIT.RecordingListener;
import dev.fencing.testsupport.EtcdServers;
import dev.fencing.testsupport.TcpRelay;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import java.lang.reflect.Field;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
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
 * The one watch of a registry's lock keys: a key deleted by another client ends its hold, a deletion while the
 * watch's stream is broken ends it too (after the read of the key that follows the watch's replacement, also among
 * more keys under the prefix than one read could fetch), a key that no watch nor read confirms for a TTL ends it
 * while its keep-alives succeed, as does a deletion from before the
 * watch started (the read that confirms an older key), one watch at a time across dropped
 * connections (through a {@link TcpRelay} in front of etcd) and none after the locks close, and a holder cut off
 * from etcd is told of its loss without checking; a held key another client overwrote ends its hold as a
 * deleted one does, and a waiter whose key another client overwrote is not granted under it.
 */
class KeyDeletionWatchIT {
    private final List<AutoCloseable> opened = new ArrayList<>();
    private final ExecutorService threads = Executors.newCachedThreadPool();
    private String prefix;

    @BeforeEach
    void start(TestInfo test) {
        prefix = "it/key-deletion-watch/" + test.getTestMethod().orElseThrow().getName() + "-" + System.nanoTime();
    }

    @AfterEach
    void stop() throws Exception {
        threads.shutdownNow();
        for (int i = opened.size() - 1; i >= 0; i--) {
            opened.get(i).close();
        }
    }

    @Test
    void oneWatchServesEveryHoldAndDoesNotMultiplyOnStreamErrorsNorOutliveTheLocks() throws Exception {
        TcpRelay relay = relayToSharedEtcd();
        Client client = client("http://127.0.0.1:" + relay.port());
        EtcdLockRegistry registry = registry(client, Duration.ofSeconds(10), new FencedLockListener() {});
        Lease first = registry.lock("first").acquire();
        Lease second = registry.lock("second").acquire();
        assertThat(watchersOn(client)).containsExactly(prefix + "/");

        for (int drop = 1; drop <= 3; drop++) {
            Watch.Watcher before = registry.keys.deletions.watcherForTest();
            relay.dropConnections();
            // the failed watch is replaced; jetcd resumes a watcher it was not told to close 500 ms after the error
            await().atMost(Duration.ofSeconds(10)).until(() -> registry.keys.deletions.watcherForTest() != before);
            await().during(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertThat(
                            watchersOn(client))
                    .as("live watches after a dropped connection")
                    .containsExactly(prefix + "/"));
        }
        assertThat(first.isValid()).isTrue();
        assertThat(second.isValid()).isTrue();

        first.close();
        second.close();
        assertThat(watchersOn(client)).as("the watch outlives the leases").containsExactly(prefix + "/");

        registry.close();

        assertThat(watchersOn(client)).as("watches left after the locks closed").isEmpty();
    }

    @Test
    void aHeldKeyDeletedByAnotherClientEndsThatLeaseThroughTheSharedWatch() throws Exception {
        Client client = client(EtcdServers.shared().endpoints().get(0));
        Client outsider = client(EtcdServers.shared().endpoints().get(0));
        RecordingListener told = new RecordingListener();
        EtcdLockRegistry registry = registry(client, Duration.ofSeconds(10), told);
        Lease deleted = registry.lock("deleted").acquire();
        Lease kept = registry.lock("kept").acquire();

        outsider.getKVClient().delete(EtcdLockRegistry.holdOf(deleted).keyBytes).get(10, TimeUnit.SECONDS);

        // isValid() reads nothing from etcd, and the etcd lease is still alive: only the watch can tell
        await().atMost(Duration.ofSeconds(5)).until(() -> !deleted.isValid());
        assertThat(EtcdLockRegistry.holdOf(deleted).loss()).isEqualTo(LeaseLoss.NODE_GONE);
        await().atMost(Duration.ofSeconds(5))
                .untilAsserted(() -> assertThat(told.causes).containsExactly(LeaseLoss.NODE_GONE));
        assertThat(kept.isValid()).isTrue();
        assertThat(watchersOn(client)).as("the only watch").containsExactly(prefix + "/");
        deleted.close();
        kept.close();
    }

    /**
     * Another client's plain put on the held key: the key still exists with the grant's create revision (it still
     * stands first among the lock's contenders), but it is no longer attached to the hold's etcd lease, so the end of
     * that lease no longer deletes it, and its value is the other client's. The etcd lease lives and its keep-alives
     * are answered: only the watch can tell.
     */
    @Test
    void aHeldKeyOverwrittenByAnotherClientsPutEndsThatLeaseThoughTheKeyStillExists() throws Exception {
        Client client = client(EtcdServers.shared().endpoints().get(0));
        Client outsider = client(EtcdServers.shared().endpoints().get(0));
        RecordingListener told = new RecordingListener();
        EtcdLockRegistry registry = registry(client, Duration.ofSeconds(10), told);
        Lease overwritten = registry.lock("overwritten").acquire();
        Lease kept = registry.lock("kept").acquire();
        EtcdHold hold = EtcdLockRegistry.holdOf(overwritten);

        outsider.getKVClient()
                .put(hold.keyBytes, EtcdTesting.bytes("another client's value"))
                .get(10, TimeUnit.SECONDS);

        KeyValue after = onlyKey(outsider, hold.keyBytes);
        assertThat(after.getCreateRevision())
                .as("create revision after the put")
                .isEqualTo(overwritten.token());
        assertThat(after.getLease()).as("etcd lease of the key after the put").isZero();
        await().atMost(Duration.ofSeconds(5))
                .alias("the lease whose key another client overwrote reads invalid")
                .until(() -> !overwritten.isValid());
        assertThat(hold.loss()).isEqualTo(LeaseLoss.NODE_GONE);
        await().atMost(Duration.ofSeconds(5))
                .untilAsserted(() -> assertThat(told.causes).containsExactly(LeaseLoss.NODE_GONE));
        assertThat(kept.isValid()).isTrue();
        overwritten.close();
        assertThat(onlyKey(outsider, hold.keyBytes).getValue())
                .as("the key after the release revoked the hold's etcd lease: another client's now")
                .isEqualTo(EtcdTesting.bytes("another client's value"));
        outsider.getKVClient().delete(hold.keyBytes).get(10, TimeUnit.SECONDS);
        kept.close();
    }

    @Test
    void aHeldKeyOverwrittenWhileTheWatchStreamIsBrokenEndsTheLeaseOnceTheWatchIsReplaced() throws Exception {
        TcpRelay relay = relayToSharedEtcd();
        Client client = client("http://127.0.0.1:" + relay.port());
        Client outsider = client(EtcdServers.shared().endpoints().get(0));
        EtcdLockRegistry registry = registry(client, Duration.ofSeconds(10), new FencedLockListener() {});
        Lease lease = registry.lock("overwritten-unseen").acquire();
        EtcdHold hold = EtcdLockRegistry.holdOf(lease);
        Watch.Watcher before = registry.keys.deletions.watcherForTest();

        // the put's event never reaches the client: held back, then dropped with the stream
        relay.holdBack();
        outsider.getKVClient()
                .put(hold.keyBytes, EtcdTesting.bytes("another client's value"))
                .get(10, TimeUnit.SECONDS);
        relay.dropConnections();

        await().atMost(Duration.ofSeconds(10)).until(() -> registry.keys.deletions.watcherForTest() != before);
        // the new watch starts after the put, and the replacement's read finds the key with the grant's revision
        await().atMost(Duration.ofSeconds(5))
                .alias("the lease whose key another client overwrote reads invalid")
                .until(() -> !lease.isValid());
        assertThat(hold.loss()).isEqualTo(LeaseLoss.NODE_GONE);
        lease.close();
        outsider.getKVClient().delete(hold.keyBytes).get(10, TimeUnit.SECONDS);
    }

    /**
     * A waiter's key overwritten by another client while the watch cannot tell (the put's event dropped with the
     * stream, the replacement's reads refused): the waiter's own read of its predecessor, made in one transaction
     * with a check of its key, must not grant it under a key that is no longer on its etcd lease. It contends again
     * with a new key, which waits behind the overwritten one.
     */
    @Test
    void aWaiterWhoseKeyAnotherClientOverwroteIsNotGrantedUnderIt() throws Exception {
        Duration ttl = Duration.ofSeconds(10);
        TcpRelay relay = relayToSharedEtcd();
        Client client = client("http://127.0.0.1:" + relay.port());
        Client outsider = client(EtcdServers.shared().endpoints().get(0));
        EtcdLockRegistry registry = registry(client, ttl, new FencedLockListener() {});
        ByteSequence revisionKey = EtcdTesting.bytes(prefix + "/");
        registry.keys.deletions.readsForTest(key -> key.equals(revisionKey)
                ? client.getKVClient().get(key)
                : CompletableFuture.failedFuture(new IllegalStateException("UNAVAILABLE: reads refused by the test")));
        Lease held = registry(outsider, ttl, new FencedLockListener() {})
                .lock("queued")
                .acquire();
        List<String> waiterKeys = new CopyOnWriteArrayList<>();
        registry.predecessorWatched((waiter, predecessor) -> waiterKeys.add(waiter));
        FencedLock lock = registry.lock("queued");
        Future<Optional<Long>> waiter = threads.submit(() -> {
            Optional<Lease> taken = lock.tryAcquire(Duration.ofSeconds(5));
            taken.ifPresent(Lease::close);
            return taken.map(Lease::token);
        });
        await().atMost(Duration.ofSeconds(10)).until(() -> !waiterKeys.isEmpty());
        ByteSequence waiterKey = EtcdTesting.bytes(waiterKeys.get(0));
        Watch.Watcher before = registry.keys.deletions.watcherForTest();

        relay.holdBack();
        outsider.getKVClient()
                .put(waiterKey, EtcdTesting.bytes("another client's value"))
                .get(10, TimeUnit.SECONDS);
        relay.dropConnections();
        await().atMost(Duration.ofSeconds(10)).until(() -> registry.keys.deletions.watcherForTest() != before);
        held.close();

        assertThat(waiter.get(30, TimeUnit.SECONDS))
                .as("the token of a grant under the waiter's overwritten key")
                .isEmpty();
        assertThat(EtcdTesting.keysUnder(outsider, registry.contendersOf("queued")))
                .extracting(kv -> EtcdTesting.text(kv.getKey()))
                .as("the lock's keys once the waiter gave up")
                .containsExactly(waiterKeys.get(0));
        outsider.getKVClient().delete(waiterKey).get(10, TimeUnit.SECONDS);
    }

    @Test
    void aHeldKeyDeletedWhileTheWatchStreamIsBrokenEndsTheLeaseOnceTheWatchIsReplaced() throws Exception {
        TcpRelay relay = relayToSharedEtcd();
        Client client = client("http://127.0.0.1:" + relay.port());
        Client outsider = client(EtcdServers.shared().endpoints().get(0));
        EtcdLockRegistry registry = registry(client, Duration.ofSeconds(10), new FencedLockListener() {});
        Lease lease = registry.lock("deleted-unseen").acquire();
        Watch.Watcher before = registry.keys.deletions.watcherForTest();

        // the deletion's event never reaches the client: held back, then dropped with the stream
        relay.holdBack();
        outsider.getKVClient().delete(EtcdLockRegistry.holdOf(lease).keyBytes).get(10, TimeUnit.SECONDS);
        relay.dropConnections();

        await().atMost(Duration.ofSeconds(10)).until(() -> registry.keys.deletions.watcherForTest() != before);
        // the new watch starts after the deletion; the etcd lease is alive: only the replacement's read can tell
        await().atMost(Duration.ofSeconds(5)).until(() -> !lease.isValid());
        assertThat(EtcdLockRegistry.holdOf(lease).loss()).isEqualTo(LeaseLoss.NODE_GONE);
        lease.close();
    }

    @Test
    void aHeldKeyDeletedWhileTheWatchIsBrokenIsFoundByItsOwnReadAmongMoreKeysThanOnePrefixReadCouldFetch()
            throws Exception {
        TcpRelay relay = relayToSharedEtcd();
        // a limit that a read of every key under the prefix exceeds here, as it exceeds gRPC's 4 MiB at ~55k keys
        Client client = EtcdTesting.clientBuilder(List.of("http://127.0.0.1:" + relay.port()))
                .maxInboundMessageSize(64 * 1024)
                .build();
        opened.add(client);
        Client outsider = client(EtcdServers.shared().endpoints().get(0));
        List<CompletableFuture<?>> puts = new ArrayList<>();
        for (int i = 0; i < 1_000; i++) {
            // another process's keys, under a nested prefix: under the watch's range, not this registry's holds
            puts.add(outsider.getKVClient()
                    .put(EtcdTesting.bytes(prefix + "/nested/sku-" + i), EtcdTesting.bytes("x".repeat(100))));
        }
        CompletableFuture.allOf(puts.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);
        GetOption everyKey =
                GetOption.builder().isPrefix(true).withKeysOnly(true).build();
        assertThatThrownBy(() -> client.getKVClient()
                        .get(EtcdTesting.bytes(prefix + "/"), everyKey)
                        .get(10, TimeUnit.SECONDS))
                .as("a read of every key under the prefix by the holder's client")
                .hasMessageContaining("RESOURCE_EXHAUSTED");
        EtcdLockRegistry registry = registry(client, Duration.ofSeconds(10), new FencedLockListener() {});
        Lease lease = registry.lock("deleted-unseen").acquire();
        Watch.Watcher before = registry.keys.deletions.watcherForTest();

        relay.holdBack();
        outsider.getKVClient().delete(EtcdLockRegistry.holdOf(lease).keyBytes).get(10, TimeUnit.SECONDS);
        relay.dropConnections();

        await().atMost(Duration.ofSeconds(10)).until(() -> registry.keys.deletions.watcherForTest() != before);
        await().atMost(Duration.ofSeconds(5)).until(() -> !lease.isValid());
        assertThat(EtcdLockRegistry.holdOf(lease).loss()).isEqualTo(LeaseLoss.NODE_GONE);
        lease.close();
        outsider.getKVClient()
                .delete(
                        EtcdTesting.bytes(prefix + "/nested/"),
                        DeleteOption.builder().isPrefix(true).build())
                .get(10, TimeUnit.SECONDS);
    }

    @Test
    void aHeldKeyThatNoWatchNorReadConfirmsForATtlEndsTheLeaseWhileItsKeepAlivesSucceed() throws Exception {
        Duration ttl = Duration.ofSeconds(2);
        TcpRelay relay = relayToSharedEtcd();
        Client client = client("http://127.0.0.1:" + relay.port());
        Client outsider = client(EtcdServers.shared().endpoints().get(0));
        RecordingListener told = new RecordingListener();
        EtcdLockRegistry registry = registry(client, ttl, told);
        Lease lease = registry.lock("unconfirmed").acquire();
        EtcdHold hold = EtcdLockRegistry.holdOf(lease);
        ByteSequence revisionKey = EtcdTesting.bytes(prefix + "/");
        // a member that answers keep-alives and watches but not reads of the held keys
        registry.keys.deletions.readsForTest(key -> key.equals(revisionKey)
                ? client.getKVClient().get(key)
                : CompletableFuture.failedFuture(new IllegalStateException("UNAVAILABLE: reads refused by the test")));
        Watch.Watcher before = registry.keys.deletions.watcherForTest();

        // an operator deletes the key while the deletion's event is held back and then dropped with the stream
        relay.holdBack();
        outsider.getKVClient().delete(hold.keyBytes).get(10, TimeUnit.SECONDS);
        relay.dropConnections();
        long brokenAt = System.nanoTime();
        await().atMost(Duration.ofSeconds(10)).until(() -> registry.keys.deletions.watcherForTest() != before);
        Lease next = registry(outsider, ttl, new FencedLockListener() {})
                .lock("unconfirmed")
                .tryAcquire(Duration.ofSeconds(10))
                .orElseThrow();
        long deadlineAtBreak = brokenAt + ttl.toNanos() - ttl.toNanos() / EtcdLockRegistry.MARGIN_DIVISOR;
        await().atMost(Duration.ofSeconds(5))
                .alias("a keep-alive sent after the break and answered")
                .until(() -> hold.validUntilNanos() - deadlineAtBreak > 0);
        assertThat(lease.isValid())
                .as("valid while its key is gone and another holds the lock")
                .isTrue();

        await().atMost(ttl.plusSeconds(3)).until(() -> !lease.isValid());

        assertThat(hold.loss()).isEqualTo(LeaseLoss.CONNECTION_SUSPENDED);
        assertThat(Duration.ofNanos(System.nanoTime() - brokenAt)).isLessThan(ttl.plusSeconds(3));
        await().atMost(Duration.ofSeconds(5))
                .untilAsserted(() -> assertThat(told.causes).containsExactly(LeaseLoss.CONNECTION_SUSPENDED));
        lease.close();
        next.close();
    }

    @Test
    void aHoldWhoseKeyIsOlderThanTheWatchIsCheckedByAReadAndEndsWhenItsKeyIsGone() throws Exception {
        Client client = client(EtcdServers.shared().endpoints().get(0));
        Client outsider = client(EtcdServers.shared().endpoints().get(0));
        EtcdLockRegistry registry = registry(client, Duration.ofSeconds(10), new FencedLockListener() {});
        // a contender's key, created and deleted before the watch starts: the watch cannot report that deletion
        long leaseId =
                outsider.getLeaseClient().grant(10).get(10, TimeUnit.SECONDS).getID();
        EtcdHold hold = new EtcdHold(registry, "older", registry.pathOf("older"), Thread.currentThread(), null, null);
        hold.leased(leaseId, registry.contendersOf("older") + Long.toHexString(leaseId));
        registry.keys.track(hold);
        hold.token = outsider.getKVClient()
                .put(
                        hold.keyBytes,
                        EtcdTesting.bytes("older"),
                        PutOption.builder().withLeaseId(leaseId).build())
                .get(10, TimeUnit.SECONDS)
                .getHeader()
                .getRevision();
        outsider.getKVClient().delete(hold.keyBytes).get(10, TimeUnit.SECONDS);
        Lease later = registry.lock("later").acquire(); // opens the watch after the deletion

        registry.keys.watch(hold);

        await().atMost(Duration.ofSeconds(5)).until(() -> hold.loss() != null);
        assertThat(hold.loss()).isEqualTo(LeaseLoss.NODE_GONE);
        assertThat(later.isValid()).isTrue();
        later.close();
        outsider.getLeaseClient().revoke(leaseId).get(10, TimeUnit.SECONDS);
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

    private static KeyValue onlyKey(Client client, ByteSequence key) throws Exception {
        List<KeyValue> kvs =
                client.getKVClient().get(key).get(10, TimeUnit.SECONDS).getKvs();
        assertThat(kvs).as("keys named " + EtcdTesting.text(key)).hasSize(1);
        return kvs.get(0);
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

    /** The keys of the live (not closed) watchers in {@code client}'s watch client, read from jetcd's internals. */
    @SuppressWarnings("unchecked")
    private static List<String> watchersOn(Client client) throws ReflectiveOperationException {
        Object watchClient = client.getWatchClient();
        Field watchersField = watchClient.getClass().getDeclaredField("watchers");
        watchersField.setAccessible(true);
        List<Object> watchers = List.copyOf((List<Object>) watchersField.get(watchClient));
        List<String> keys = new ArrayList<>();
        for (Object watcher : watchers) {
            Field keyField = watcher.getClass().getDeclaredField("key");
            keyField.setAccessible(true);
            Field closedField = watcher.getClass().getDeclaredField("closed");
            closedField.setAccessible(true);
            if (!((AtomicBoolean) closedField.get(watcher)).get()) {
                keys.add(((ByteSequence) keyField.get(watcher)).toString(StandardCharsets.UTF_8));
            }
        }
        return keys;
    }
}
