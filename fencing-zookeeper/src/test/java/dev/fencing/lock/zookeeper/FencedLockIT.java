package dev.fencing.lock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.lock.FencedLock;
import dev.fencing.lock.Lease;
import dev.fencing.testsupport.ZooKeeperEndpoint;
import dev.fencing.testsupport.ZooKeeperServers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.data.Stat;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

class FencedLockIT {
    private static ZooKeeperEndpoint zk;
    private ZooKeeperClients clients;
    private String path;

    @BeforeAll
    static void startServer() {
        zk = ZooKeeperServers.start();
    }

    @AfterAll
    static void stopServer() {
        zk.close();
    }

    @BeforeEach
    void setUp(TestInfo test) {
        clients = new ZooKeeperClients(zk.connectString());
        path = "/it/fenced-lock/" + test.getTestMethod().orElseThrow().getName() + "-" + System.nanoTime();
    }

    @AfterEach
    void tearDown() {
        clients.close();
    }

    @Test
    void firstGrantOfAFreshLockHasTokenTwoSinceTheMarkerTookSequenceZeroAndItsParentCarriesMarkerAndHistory()
            throws Exception {
        CuratorFramework client = clients.newClient(Duration.ofSeconds(10));
        FencedLock lock = clients.locks(client).lock(path);

        try (Lease lease = lock.acquire()) {
            assertThat(lease.token()).isEqualTo(2);
            assertThat(lease.path()).isEqualTo(path);
            assertThat(lease.isValid()).isTrue();
            assertThat(lease.verify()).isTrue();
        }
        assertThat(client.getChildren().forPath(path)).containsExactly("fencing-base-0");
        assertThat(new String(client.getData().forPath("/fencing-lock-history" + path), StandardCharsets.US_ASCII))
                .isEqualTo("0");
        try (Lease again = lock.acquire()) {
            assertThat(again.token()).isEqualTo(3);
        }
    }

    /** Measures what docs/locks.md says about the counter behind SEQUENCE tokens. */
    @Test
    void theSequenceCountsChildCreatesButNotDeletesWhileCversionCountsBoth() throws Exception {
        CuratorFramework client = clients.newClient(Duration.ofSeconds(10));
        FencedLock lock = clients.locks(client).lock(path);
        assertThat(lock.runLocked(Lease::token)).isEqualTo(2); // marker create, lock node create and delete
        client.create().forPath(path + "/by-hand");
        client.delete().forPath(path + "/by-hand");

        assertThat(lock.runLocked(Lease::token))
                .as("3 creates before this node: sequence 3, token 4 (deletes counted would give 6)")
                .isEqualTo(4);
        assertThat(client.checkExists().forPath(path).getCversion())
                .as("4 creates and 3 deletes")
                .isEqualTo(7);
    }

    @Test
    void reEnteringTheLockOnTheSameThreadReturnsTheSameToken() {
        FencedLocks locks = clients.locks(clients.newClient(Duration.ofSeconds(10)));
        FencedLock lock = locks.lock(path);

        try (Lease outer = lock.acquire();
                Lease inner = locks.lock(path).acquire()) {
            assertThat(inner.token()).isEqualTo(outer.token());
            inner.close();
            inner.close();
            assertThat(outer.verify())
                    .as("closing the inner grant keeps the lock")
                    .isTrue();
            // the closed grant answers as its isValid() does, although the hold it shared is still there
            assertThat(inner.isValid()).isFalse();
            assertThat(inner.verify()).as("verify() of the closed inner grant").isFalse();
            assertThat(outer.isValid()).isTrue();
        }
        // the lock is free again: another client gets it at once
        FencedLock other =
                clients.locks(clients.newClient(Duration.ofSeconds(10))).lock(path);
        try (Lease lease = other.tryAcquire(Duration.ofSeconds(5)).orElseThrow()) {
            assertThat(lease.token()).isGreaterThan(1);
        }
    }

    @Test
    void aTimeoutOfCenturiesWaitsAsLongAsItTakesInsteadOfOverflowing() {
        FencedLocks locks = clients.locks(clients.newClient(Duration.ofSeconds(10)));
        Duration forever = Duration.ofSeconds(Long.MAX_VALUE);
        try (Lease lease = locks.lock(path).tryAcquire(forever).orElseThrow()) {
            assertThat(lease.isValid()).isTrue();
        }
        assertThat(locks.election(path + "-election", "a")
                        .awaitLeadership(forever)
                        .orElseThrow()
                        .isValid())
                .isTrue();
    }

    @Test
    void tryAcquireGivesUpWhileAnotherClientHoldsTheLock() throws Exception {
        FencedLock mine =
                clients.locks(clients.newClient(Duration.ofSeconds(10))).lock(path);
        FencedLock theirs =
                clients.locks(clients.newClient(Duration.ofSeconds(10))).lock(path);

        long theirToken;
        try (Lease held = theirs.acquire()) {
            theirToken = held.token();
            Optional<Lease> attempt = CompletableFuture.supplyAsync(() -> mine.tryAcquire(Duration.ofMillis(300)))
                    .get();
            assertThat(attempt).isEmpty();
            assertThat(held.isValid()).isTrue();
        }
        // the abandoned attempt used up a sequence number too; the next grant is still above the last one
        assertThat(mine.runLocked(Lease::token)).isGreaterThan(theirToken);
    }

    @Test
    void zxidTokensComeFromTheLockNodesCreationTransaction() throws Exception {
        CuratorFramework client = clients.newClient(Duration.ofSeconds(10));
        FencedLock lock = clients.locks(client).lock(path, TokenSource.ZXID);

        long first;
        try (Lease lease = lock.acquire()) {
            first = lease.token();
            assertThat(client.getChildren().forPath(path)).singleElement().satisfies(child -> {
                Stat stat = client.checkExists().forPath(path + "/" + child);
                assertThat(stat.getCzxid()).isEqualTo(lease.token());
            });
        }
        try (Lease lease = lock.acquire()) {
            assertThat(lease.token()).isGreaterThan(first);
        }
    }

    @Test
    void refusesToIssueTokensWhenTheSequenceNearsItsWrap() {
        CuratorFramework client = clients.newClient(Duration.ofSeconds(10));
        // a margin that leaves room for sequences up to 2 only (0 is the marker's), so the guard is reached quickly
        FencedLocks locks = clients.track(FencedLocks.builder(client)
                .sequenceWrapMargin(Integer.MAX_VALUE - 2)
                .build());
        FencedLock lock = locks.lock(path);
        for (int expected = 2; expected <= 3; expected++) { // sequences 1 and 2
            assertThat(lock.runLocked(Lease::token)).isEqualTo(expected);
        }

        assertThatThrownBy(lock::acquire)
                .isInstanceOf(FenceTokenExhaustedException.class)
                .hasMessageContaining(path)
                .hasMessageContaining("wrap");
        // the refused grant released its node: an unrestricted client still gets the lock at once
        FencedLock other =
                clients.locks(clients.newClient(Duration.ofSeconds(10))).lock(path);
        assertThat(other.tryAcquire(Duration.ofSeconds(5))).hasValueSatisfying(Lease::close);
    }

    @Test
    void badInputFailsAtOnceNamingTheValue() {
        FencedLocks locks = clients.locks(clients.newClient(Duration.ofSeconds(10)));
        FencedLock lock = locks.lock(path);

        assertThatThrownBy(() -> locks.lock("")).hasMessageContaining("must not be empty");
        assertThatThrownBy(() -> locks.lock("no-slash")).hasMessageContaining("'no-slash'");
        try (Lease held = lock.acquire()) {
            assertThatThrownBy(() -> locks.lock(path, TokenSource.ZXID))
                    .hasMessageContaining(path)
                    .hasMessageContaining("SEQUENCE");
        }
        assertThatThrownBy(() -> locks.lock("/fencing-lock-history/x")).hasMessageContaining("history");
        assertThatThrownBy(() -> lock.tryAcquire(Duration.ZERO)).hasMessageContaining("PT0S");
        assertThatThrownBy(() -> lock.tryAcquire(Duration.ofSeconds(-1))).hasMessageContaining("PT-1S");
        assertThatThrownBy(() -> lock.tryAcquire(null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> lock.runLocked(null)).isInstanceOf(NullPointerException.class);
    }
}
