package dev.fencing.lock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.jdbc.FencedUpdate;
import dev.fencing.jdbc.FencedWriter;
import dev.fencing.jdbc.WriteOutcome;
import dev.fencing.lock.FencedReadWriteLock;
import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.LeaseLostException;
import dev.fencing.testsupport.ProcessFreezer;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * The read/write lock on a real server: readers share, a writer excludes them, write tokens rise above
 * every earlier grant, a downgrade keeps writers queued behind it waiting, and a frozen writer's late
 * write is refused by the database while the same write without the fence lands.
 */
class FencedReadWriteLockIT {
    private static final Duration SHORT = Duration.ofMillis(700);
    private static LockAndDatabase servers;

    private ZooKeeperClients clients;
    private String path;

    @BeforeAll
    static void startServers() {
        servers = LockAndDatabase.start("rw_lock_it", "price_list");
    }

    @AfterAll
    static void stopServers() {
        servers.close();
    }

    @BeforeEach
    void setUp(TestInfo test) {
        clients = new ZooKeeperClients(servers.zk.connectString());
        path = "/it/rw-lock/" + test.getTestMethod().orElseThrow().getName() + "-" + System.nanoTime();
    }

    @AfterEach
    void tearDown() {
        clients.close();
    }

    private FencedReadWriteLock newClientsLock() {
        return clients.locks(clients.newClient(Duration.ofSeconds(10))).readWriteLock(path);
    }

    @Test
    void readersShareTheLockAndAWriterWaitsUntilTheLastReaderLeaves() throws Exception {
        FencedReadWriteLock a = newClientsLock();
        FencedReadWriteLock b = newClientsLock();
        FencedReadWriteLock c = newClientsLock();

        try (Lease readA = a.readLock().acquire()) {
            Optional<Lease> readB = b.readLock().tryAcquire(SHORT);
            assertThat(readB).as("a second reader, while the first reads").isPresent();
            CompletableFuture<Long> writer = async(() -> c.writeLock().runLocked(Lease::token));
            assertThat(wait(writer, SHORT))
                    .as("the writer, while two readers read")
                    .isNull();
            readB.get().close();
            assertThat(wait(writer, SHORT))
                    .as("the writer, while one reader reads")
                    .isNull();
            readA.close();
            assertThat(wait(writer, Duration.ofSeconds(10))).isGreaterThan(readA.token());
        }
        try (Lease write = a.writeLock().acquire()) {
            assertThat(b.readLock().tryAcquire(SHORT))
                    .as("a reader, while a writer writes")
                    .isEmpty();
            assertThat(c.writeLock().tryAcquire(SHORT)).as("a second writer").isEmpty();
            assertThat(write.isValid()).isTrue();
        }
    }

    @Test
    void aWaitingWriterHoldsBackReadersThatComeAfterIt() throws Exception {
        FencedReadWriteLock a = newClientsLock();
        FencedReadWriteLock b = newClientsLock();
        FencedReadWriteLock c = newClientsLock();

        try (Lease readA = a.readLock().acquire()) {
            CompletableFuture<Long> writer = async(() -> b.writeLock().runLocked(Lease::token));
            awaitNodes(2);
            assertThat(c.readLock().tryAcquire(SHORT))
                    .as("a reader behind a waiting writer")
                    .isEmpty();
            readA.close();
            assertThat(wait(writer, Duration.ofSeconds(10))).isGreaterThan(readA.token());
        }
    }

    @Test
    void writeTokensRiseAboveEveryEarlierWriteAndReadAndReadTokensLieBetweenTheWritesAroundThem() {
        FencedReadWriteLock a = newClientsLock();
        FencedReadWriteLock b = newClientsLock();

        long write1 = a.writeLock().runLocked(Lease::token);
        long read1 = b.readLock().runLocked(Lease::token);
        long read2 = a.readLock().runLocked(Lease::token);
        long write2 = b.writeLock().runLocked(Lease::token);
        long write3 = a.writeLock().runLocked(Lease::token);

        assertThat(write1).isEqualTo(2);
        assertThat(read1).isGreaterThan(write1);
        assertThat(read2).isGreaterThan(read1);
        assertThat(write2).isGreaterThan(read2);
        assertThat(write3).isGreaterThan(write2);
    }

    @Test
    void reEntryKeepsTheTokenAndADowngradedReadTakesTheWritesTokenAndPlace() throws Exception {
        FencedReadWriteLock a = newClientsLock();
        FencedReadWriteLock b = newClientsLock();
        FencedReadWriteLock c = newClientsLock();

        Lease write = a.writeLock().acquire();
        try (Lease again = a.writeLock().acquire()) {
            assertThat(again.token()).isEqualTo(write.token());
        }
        CompletableFuture<Long> queuedWriter = async(() -> b.writeLock().runLocked(Lease::token));
        awaitNodes(2);
        Lease downgraded = a.readLock().acquire();
        assertThat(downgraded.token()).as("the read grant under the write hold").isEqualTo(write.token());
        write.close();

        assertThat(wait(queuedWriter, SHORT))
                .as("the writer that queued behind the write node, while the downgraded reader reads")
                .isNull();
        Optional<Lease> otherReader = c.readLock().tryAcquire(SHORT);
        assertThat(otherReader).as("another reader is behind the queued writer").isEmpty();
        downgraded.close();
        assertThat(wait(queuedWriter, Duration.ofSeconds(10))).isGreaterThan(write.token());
    }

    /**
     * Curator cannot upgrade: a write node queued behind the thread's own read node waits for it, until the
     * timeout, or for ever with a plain acquire. The attempt is refused at once, naming the lock, whether the
     * read is the thread's own grant or one downgraded from a write it has released since; another client's
     * writer still gets the lock once the read is released.
     */
    @Test
    void aReadHolderAskingForTheWriteLockIsRefusedAtOnceInsteadOfWaitingOnItsOwnReadNode() throws Exception {
        CuratorFramework client = clients.newClient(Duration.ofSeconds(10));
        FencedReadWriteLock lock = clients.locks(client).readWriteLock(path);
        FencedReadWriteLock other = newClientsLock();

        try (Lease read = lock.readLock().acquire()) {
            assertThatThrownBy(() -> lock.writeLock().tryAcquire(SHORT))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining(path)
                    .hasMessageContaining("cannot be upgraded");
            assertThat(client.getChildren().forPath(path))
                    .as("no write node was left behind")
                    .noneMatch(n -> n.contains("__WRIT__"));
            assertThat(read.isValid()).isTrue();
        }
        CompletableFuture<Lease> plain = async(() -> {
            try (Lease read = lock.readLock().acquire()) {
                return lock.writeLock().acquire();
            }
        });
        assertThatThrownBy(() -> plain.get(10, TimeUnit.SECONDS))
                .as("a plain acquire of the write lock under the same thread's read lease")
                .hasCauseInstanceOf(IllegalStateException.class);

        Lease write = lock.writeLock().acquire();
        Lease downgraded = lock.readLock().acquire();
        try (Lease again = lock.writeLock().tryAcquire(SHORT).orElseThrow()) {
            assertThat(again.token())
                    .as("re-entry of the write lock it still holds beside the downgraded read")
                    .isEqualTo(write.token());
        }
        write.close();
        assertThatThrownBy(() -> lock.writeLock().tryAcquire(SHORT))
                .as("the write lock again, under a read downgraded from a released write")
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(path);
        downgraded.close();
        assertThat(other.writeLock().tryAcquire(Duration.ofSeconds(10)))
                .as("another client's writer once the read is released")
                .isPresent();
    }

    /**
     * The write node is gone (here deleted by hand; a session loss does the same), and another writer has the
     * lock: a downgrade must not put a reader next to it, whether or not the lease has seen the delete yet
     * (LeaseTruthIT holds the delete's event back to try the downgrade before it).
     */
    @Test
    void aWriteNodeThatIsGoneCannotBeDowngradedFrom() throws Exception {
        CuratorFramework client = clients.newClient(Duration.ofSeconds(10));
        FencedReadWriteLock lock = clients.locks(client).readWriteLock(path);
        FencedReadWriteLock other = newClientsLock();
        try (Lease write = lock.writeLock().acquire()) {
            CompletableFuture<Lease> nextWriter = async(() -> other.writeLock().acquire());
            awaitNodes(2);
            String writeNode = path + "/"
                    + client.getChildren().forPath(path).stream()
                            .filter(n -> n.contains("__WRIT__"))
                            .min(java.util.Comparator.comparing(n -> n.substring(n.lastIndexOf("__WRIT__"))))
                            .orElseThrow();
            client.delete().forPath(writeNode);
            Lease next = nextWriter.get(10, TimeUnit.SECONDS);

            assertThatThrownBy(() -> lock.readLock().acquire())
                    .isInstanceOf(LeaseLostException.class)
                    .hasMessageContaining(path)
                    .hasMessageContaining(Long.toString(write.token()));
            assertThat(write.lossCause()).isEqualTo(LeaseLoss.NODE_GONE);
            assertThatThrownBy(() -> lock.readLock().acquire()).isInstanceOf(LeaseLostException.class);
            assertThat(next.verify()).as("the next writer holds alone").isTrue();
            assertThat(client.getChildren().forPath(path))
                    .as("no read node was left behind")
                    .noneMatch(n -> n.contains("__READ__"));
        }
    }

    @Test
    void aPathHoldsOneRecipeOnlyAWriteGrantAmongExclusiveLockNodesIsRefusedAndTheOtherWayRound() {
        CuratorFramework client = clients.newClient(Duration.ofSeconds(10));
        FencedLocks locks = clients.locks(client);
        FencedLocks others = clients.locks(clients.newClient(Duration.ofSeconds(10)));
        try (Lease exclusive = locks.lock(path).acquire()) {
            assertThatThrownBy(() -> others.readWriteLock(path).writeLock().acquire())
                    .isInstanceOf(ForeignLockParentException.class)
                    .hasMessageContaining(path)
                    .hasMessageContaining("an exclusive lock or leader election");
            assertThat(exclusive.isValid()).isTrue();
        }
        String other = path + "-rw";
        try (Lease read = locks.readWriteLock(other).readLock().acquire()) {
            assertThatThrownBy(() -> others.lock(other).acquire())
                    .isInstanceOf(ForeignLockParentException.class)
                    .hasMessageContaining("a read/write lock");
            assertThat(read.isValid()).isTrue();
        }
    }

    @Test
    void aPathInUseHereWithOneTokenSourceIsRefusedToEveryKindOfLockWithTheOther() {
        FencedLocks locks = clients.locks(clients.newClient(Duration.ofSeconds(10)));
        try (Lease held = locks.lock(path, TokenSource.ZXID).acquire()) {
            assertThatThrownBy(() -> locks.readWriteLock(path, TokenSource.SEQUENCE))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(path)
                    .hasMessageContaining("ZXID");
            assertThatThrownBy(() -> locks.election(path, "x", TokenSource.SEQUENCE))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(path);
            assertThat(held.isValid()).isTrue();
        }
    }

    /**
     * A writer in a child JVM is frozen past its session; the next writer gets a greater token and
     * writes; the frozen writer, resumed, learns it lost the lock, and its late write under the old
     * token is refused, while the same write without the fence lands on top of the new writer's.
     */
    @Test
    void aFrozenWritersLateWriteIsRefusedWhileTheSameWriteWithoutTheFenceLands() throws Exception {
        servers.reset("eu");
        FencedWriter writer = FencedWriter.builder(servers.jdbi).build();
        FencedReadWriteLock successorLock = newClientsLock();
        Process holder = ChildJvm.start(PausedHolderMain.class, servers.zk.connectString(), path, "2000", "write");
        try {
            BlockingQueue<String> lines = ChildJvm.lines(holder);
            String held = lines.poll(60, TimeUnit.SECONDS);
            assertThat(held).as("child's first line").startsWith("HELD ");
            long frozenToken = Long.parseLong(held.substring("HELD ".length()));
            assertThat(lines.poll(60, TimeUnit.SECONDS)).isEqualTo("STEADY");

            long successorToken;
            try (ProcessFreezer.Frozen frozen = ProcessFreezer.freeze(holder.pid(), Duration.ofSeconds(60))) {
                try (Lease successor = successorLock
                        .writeLock()
                        .tryAcquire(Duration.ofSeconds(30))
                        .orElseThrow()) {
                    successorToken = successor.token();
                    assertThat(writer.tryUpdate(publish(2), successorToken))
                            .isEqualTo(new WriteOutcome.Applied(successorToken));
                }
            }
            assertThat(successorToken).isGreaterThan(frozenToken);
            assertThat(lines.poll(30, TimeUnit.SECONDS))
                    .as("child after SIGCONT")
                    .startsWith("LOST ");

            assertThat(writer.tryUpdate(publish(3), frozenToken))
                    .isEqualTo(new WriteOutcome.Rejected(successorToken, frozenToken));
            assertThat(servers.value("eu")).isEqualTo(2);
            assertThat(servers.writeUnfenced("eu", 3)).isEqualTo(1);
            assertThat(servers.value("eu"))
                    .as("without the fence, the frozen writer's write lands")
                    .isEqualTo(3);
        } finally {
            ProcessFreezer.resume(holder.pid());
            holder.destroyForcibly();
        }
    }

    private static FencedUpdate publish(int version) {
        return FencedUpdate.builder(servers.table)
                .key("eu")
                .set("value", version)
                .build();
    }

    private void awaitNodes(int count) throws Exception {
        clients.awaitChildren(path, n -> n.contains("__READ__") || n.contains("__WRIT__"), count);
    }

    private static <T> CompletableFuture<T> async(java.util.function.Supplier<T> work) {
        CompletableFuture<T> result = new CompletableFuture<>();
        Thread thread = new Thread(() -> {
            try {
                result.complete(work.get());
            } catch (Throwable e) {
                result.completeExceptionally(e);
            }
        });
        thread.setDaemon(true);
        thread.start();
        return result;
    }

    /** The result if it arrives within {@code timeout}, else null. */
    private static <T> T wait(CompletableFuture<T> future, Duration timeout) throws Exception {
        try {
            return future.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            return null;
        }
    }
}
