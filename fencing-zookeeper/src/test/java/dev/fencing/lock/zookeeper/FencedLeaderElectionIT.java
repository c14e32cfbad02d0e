package dev.fencing.lock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.jdbc.FencedUpdate;
import dev.fencing.jdbc.FencedWriter;
import dev.fencing.jdbc.WriteOutcome;
import dev.fencing.lock.FencedLeaderElection;
import dev.fencing.lock.Leadership;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.LeaseLostException;
import dev.fencing.testsupport.EmbeddedZooKeeperEnsemble;
import dev.fencing.testsupport.ProcessFreezer;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * Leader election on a real server: a frozen leader is deposed by a greater term and its late write is
 * refused (the same write without the fence lands), step-down hands over at once even when the task
 * ignores its interrupt, and the participant's rules (explicit re-joining, timeouts, bad input) hold.
 */
class FencedLeaderElectionIT {
    private static LockAndDatabase servers;

    private ZooKeeperClients clients;
    private String path;

    @BeforeAll
    static void startServers() {
        servers = LockAndDatabase.start("election_it", "ledger");
    }

    @AfterAll
    static void stopServers() {
        servers.close();
    }

    @BeforeEach
    void setUp(TestInfo test) {
        clients = new ZooKeeperClients(servers.zk.connectString());
        path = "/it/election/" + test.getTestMethod().orElseThrow().getName() + "-" + System.nanoTime();
    }

    @AfterEach
    void tearDown() {
        clients.close();
    }

    private FencedLocks newClientsLocks() {
        return clients.locks(clients.newClient(Duration.ofSeconds(10)));
    }

    /**
     * Three participants in three JVMs. The leader is frozen past its 2 s session; another is elected with
     * a greater term token and writes; the old leader, resumed, is told, its task is interrupted, it does
     * not join again on its own, and its late write under the old term is refused, while the same write
     * without the fence lands on top of the new leader's.
     */
    @Test
    void aFrozenLeaderIsDeposedByAGreaterTermAndItsLateWriteIsRefused() throws Exception {
        servers.reset("main");
        FencedWriter writer = FencedWriter.builder(servers.jdbi).build();
        FencedLeaderElection observer = newClientsLocks().election(path, "observer");
        List<Process> participants = new ArrayList<>();
        try {
            Process first = ChildJvm.start(LeaderMain.class, servers.zk.connectString(), path, "p1", "2000");
            participants.add(first);
            BlockingQueue<String> firstLines = ChildJvm.lines(first);
            // (a grant that came out invalid, say from a stall of the starting JVM, is told and is no term)
            List<String> untilElected = linesUntil(firstLines, "LEADER ", Duration.ofSeconds(60));
            assertThat(untilElected).allMatch(line -> line.startsWith("TOLD ") || line.startsWith("LEADER "));
            String elected = untilElected.get(untilElected.size() - 1);
            long oldTerm = Long.parseLong(elected.substring("LEADER ".length()));
            List<BlockingQueue<String>> others = new ArrayList<>();
            for (String id : List.of("p2", "p3")) {
                Process other = ChildJvm.start(LeaderMain.class, servers.zk.connectString(), path, id, "2000");
                participants.add(other);
                others.add(ChildJvm.lines(other));
            }
            awaitParticipants(3);
            assertThat(observer.currentLeaderId()).contains("p1");
            assertThat(observer.isLeader()).isFalse();
            assertThat(writer.tryUpdate(append(1), oldTerm)).isEqualTo(new WriteOutcome.Applied(oldTerm));

            long newTerm;
            try (ProcessFreezer.Frozen frozen = ProcessFreezer.freeze(first.pid(), Duration.ofSeconds(60))) {
                newTerm = awaitLeader(others, Duration.ofSeconds(30));
                assertThat(newTerm).isGreaterThan(oldTerm);
                assertThat(observer.currentLeaderId()).isPresent().get().isIn("p2", "p3");
                assertThat(writer.tryUpdate(append(2), newTerm)).isEqualTo(new WriteOutcome.Applied(newTerm));
            }

            List<String> resumed = linesUntil(firstLines, "OWN_NODES ", Duration.ofSeconds(30));
            assertThat(resumed)
                    .as("p1 after SIGCONT")
                    .anyMatch(line ->
                            line.matches("INTERRUPTED (PAUSE_DETECTED|SESSION_LOST|CONNECTION_SUSPENDED) false"))
                    .anyMatch(
                            line -> line.matches("TOLD (PAUSE_DETECTED|SESSION_LOST|CONNECTION_SUSPENDED) " + oldTerm))
                    .anyMatch(line -> line.matches("ENDED (PAUSE_DETECTED|SESSION_LOST|CONNECTION_SUSPENDED) false"))
                    .contains("OWN_NODES 0");

            assertThat(writer.tryUpdate(append(3), oldTerm)).isEqualTo(new WriteOutcome.Rejected(newTerm, oldTerm));
            assertThat(servers.value("main")).isEqualTo(2);
            assertThat(servers.writeUnfenced("main", 3)).isEqualTo(1);
            assertThat(servers.value("main"))
                    .as("without the fence, the deposed leader's write lands")
                    .isEqualTo(3);
        } finally {
            for (Process participant : participants) {
                ProcessFreezer.resume(participant.pid());
                participant.destroyForcibly();
            }
        }
    }

    @Test
    void stepDownHandsOverAtOnceEvenWhenTheTaskIgnoresItsInterrupt() throws Exception {
        FencedLeaderElection a = newClientsLocks().election(path, "a");
        FencedLeaderElection b = newClientsLocks().election(path, "b");
        CountDownLatch leads = new CountDownLatch(1);
        CompletableFuture<LeaseLoss> aOver = a.lead(term -> {
            leads.countDown();
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(8);
            while (System.nanoTime() < until) {
                Thread.onSpinWait(); // a task that does not look at its interrupt
            }
        });
        assertThat(leads.await(10, TimeUnit.SECONDS)).isTrue();
        Leadership aTerm = a.leadership().orElseThrow();
        assertThat(a.isLeader()).isTrue();
        CompletableFuture<Leadership> bTerm = CompletableFuture.supplyAsync(b::awaitLeadership);
        awaitParticipants(2);

        a.stepDown();

        assertThat(aTerm.isValid()).isFalse();
        assertThat(aTerm.lossCause()).isEqualTo(LeaseLoss.STEPPED_DOWN);
        assertThat(a.isLeader()).isFalse();
        Leadership next = bTerm.get(4, TimeUnit.SECONDS);
        assertThat(next.token()).isGreaterThan(aTerm.token());
        assertThat(next.participantId()).isEqualTo("b");
        assertThat(b.currentLeaderId()).contains("b");
        assertThat(aOver).as("a's task is still running: it ignores interrupts").isNotDone();

        b.stepDown();
        assertThat(next.lossCause()).isEqualTo(LeaseLoss.STEPPED_DOWN);
        assertThat(a.currentLeaderId()).as("nobody joined again on its own").isEmpty();
        assertThat(aOver.get(15, TimeUnit.SECONDS)).isEqualTo(LeaseLoss.STEPPED_DOWN);
    }

    /**
     * A task that throws a checked exception its signature does not declare (a Kotlin task, Lombok's
     * {@code @SneakyThrows}): the candidacy ended with it, where it reported the end of a term that was never
     * over by a loss ({@code null}, as for a step-down before the election).
     */
    @Test
    void aTaskThatThrowsAnUndeclaredCheckedExceptionEndsTheCandidacyExceptionallyWithIt() throws Exception {
        FencedLeaderElection a = newClientsLocks().election(path, "a");
        IOException thrown = new IOException("disk full");

        CompletableFuture<LeaseLoss> aOver = a.lead(term -> sneakyThrow(thrown));

        assertThatThrownBy(() -> aOver.get(10, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class)
                .hasCause(thrown);
        assertThat(a.isLeader()).isFalse();
        FencedLeaderElection b = newClientsLocks().election(path, "b");
        assertThat(b.awaitLeadership(Duration.ofSeconds(10)))
                .as("the failed leader's node is gone")
                .isPresent();
    }

    @SuppressWarnings("unchecked")
    private static <E extends Throwable> void sneakyThrow(Throwable e) throws E {
        throw (E) e;
    }

    @Test
    void aTimedOutAwaitKeepsTheCandidacyAndEachNewTermGetsAGreaterToken() throws Exception {
        FencedLeaderElection a = newClientsLocks().election(path, "a");
        FencedLeaderElection b = newClientsLocks().election(path, "b");
        Leadership first = a.awaitLeadership();
        assertThat(first.token()).isEqualTo(2);
        assertThat(first.path()).isEqualTo(path);
        assertThat(a.awaitLeadership()).as("the current term, again").isSameAs(first);

        assertThat(b.awaitLeadership(Duration.ofMillis(300))).isEmpty();
        awaitParticipants(2);
        a.stepDown();
        Leadership second = b.awaitLeadership(Duration.ofSeconds(5)).orElseThrow();
        assertThat(second.token()).isGreaterThan(first.token());
        assertThat(second.verify()).isTrue();

        second.ensureValid();
        b.close();
        assertThatThrownBy(second::ensureValid)
                .isInstanceOf(LeaseLostException.class)
                .hasMessageContaining(path);
        Leadership third = a.awaitLeadership();
        assertThat(third.token()).isGreaterThan(second.token());
        assertThatThrownBy(b::awaitLeadership)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
    }

    /**
     * One thread awaits leadership while another steps down as soon as it leads. Whichever comes first, the
     * await returns the term that was stepped down or fails; it never joins again behind the step-down.
     */
    @Test
    void aStepDownDuringAnAwaitNeverLetsTheAwaitJoinAgain() throws Exception {
        FencedLocks locks = newClientsLocks();
        int rejoined = 0;
        for (int i = 0; i < 150; i++) {
            FencedLeaderElection participant = locks.election(path + "-" + i, "p");
            CompletableFuture<Leadership> awaiting = CompletableFuture.supplyAsync(participant::awaitLeadership);
            while (!participant.isLeader()) {
                Thread.onSpinWait();
            }
            long steppedDown = participant.leadership().map(Leadership::token).orElse(-1L);
            participant.stepDown();
            try {
                if (awaiting.get(10, TimeUnit.SECONDS).token() != steppedDown) {
                    rejoined++;
                }
            } catch (ExecutionException e) {
                assertThat(e.getCause()).isInstanceOf(IllegalStateException.class);
            }
            assertThat(participant.isLeader()).as("round %d, after stepDown", i).isFalse();
            participant.close();
        }
        assertThat(rejoined).as("awaits that joined again after the step-down").isZero();
    }

    /** Leader failover in a real 3-server ensemble while four participants take turns to lead. */
    @Test
    void termTokensKeepRisingAndValidTermsNeverOverlapWhileTheLeaderStopsAndReturns() throws Exception {
        try (EmbeddedZooKeeperEnsemble ensemble = EmbeddedZooKeeperEnsemble.start(3);
                ZooKeeperClients clients = new ZooKeeperClients(ensemble.connectString())) {
            List<EnsembleFailover.Contender> contenders = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                FencedLeaderElection election = clients.locks(clients.newClient(Duration.ofSeconds(15)))
                        .election("/it/failover-election", "participant-" + i);
                contenders.add(
                        () -> election.awaitLeadership(Duration.ofSeconds(2)).map(term -> {
                            try {
                                long start = System.nanoTime();
                                Thread.onSpinWait();
                                return new EnsembleFailover.Hold(
                                        term.token(), start, System.nanoTime(), term.isValid());
                            } finally {
                                election.stepDown();
                            }
                        }));
            }
            EnsembleFailover.assertRisingAndDisjoint(EnsembleFailover.throughFailover(ensemble, contenders, 40), 100);
        }
    }

    @Test
    void zxidTermTokensRiseToo() {
        FencedLocks locks = newClientsLocks();
        FencedLeaderElection a = locks.election(path, "a", TokenSource.ZXID);
        FencedLeaderElection b = locks.election(path, "b", TokenSource.ZXID);
        Leadership first = a.awaitLeadership();
        a.stepDown();
        Leadership second = b.awaitLeadership();
        assertThat(second.token()).isGreaterThan(first.token());
        assertThat(second.token() - first.token())
                .as("zxids, not sequence numbers: the history write, a's delete and b's create lie between them")
                .isGreaterThan(1);
    }

    @Test
    void closingTheLocksEndsTheTermInterruptsTheTaskAndWithdrawsWaitingParticipants() throws Exception {
        FencedLocks locks = newClientsLocks();
        FencedLeaderElection a = locks.election(path, "a");
        FencedLeaderElection b = locks.election(path, "b");
        CountDownLatch leads = new CountDownLatch(1);
        CompletableFuture<LeaseLoss> aOver = a.lead(term -> {
            leads.countDown();
            while (true) {
                Thread.sleep(5);
            }
        });
        assertThat(leads.await(10, TimeUnit.SECONDS)).isTrue();
        CompletableFuture<LeaseLoss> bOver = b.lead(term -> {});
        awaitParticipants(2);

        locks.close();

        assertThat(aOver.get(5, TimeUnit.SECONDS)).isEqualTo(LeaseLoss.LOCKS_CLOSED);
        assertThat(bOver.get(5, TimeUnit.SECONDS))
                .as("withdrawn before it was elected")
                .isNull();
        assertThat(newClientsLocks().election(path, "observer").currentLeaderId())
                .isEmpty();
    }

    /**
     * ZooKeeper keeps a participant's id as its node's data, in UTF-8, and half of a surrogate pair has no UTF-8
     * form: Java's encoder writes '?' in its place, so that the node would hold another id than {@code
     * participantId()} ({@code host-} and a lone high surrogate would lead as {@code host-?}, the same id as that of
     * every participant named with another half pair there).
     */
    @Test
    void refusesParticipantIdsWithHalfASurrogatePairWhichZooKeeperWouldStoreAsAnotherId() throws Exception {
        CuratorFramework client = clients.newClient(Duration.ofSeconds(10));
        client.create()
                .creatingParentsIfNeeded()
                .forPath(path + "-raw", "host-\uD800".getBytes(StandardCharsets.UTF_8));
        assertThat(new String(client.getData().forPath(path + "-raw"), StandardCharsets.UTF_8))
                .as("what ZooKeeper holds for the id")
                .isEqualTo("host-?");

        FencedLocks locks = clients.locks(client);
        assertThatThrownBy(() -> locks.election(path, "host-\uD800"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("participant id 'host-?'")
                .hasMessageContaining(path)
                .hasMessageContaining("\\uD800 at index 5");
        assertThatThrownBy(() -> locks.election(path, "\uD83D\uDE00-\uDC00"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("\\uDC00 at index 3");
        assertThatThrownBy(() -> locks.election(path, "host-\uD83D"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("\\uD83D at index 5");
        assertThat(locks.election(path, "host-\uD83D\uDE00").participantId())
                .as("a whole pair is a character")
                .isEqualTo("host-\uD83D\uDE00");
    }

    @Test
    void badInputFailsAtOnceNamingTheValue() {
        FencedLocks locks = newClientsLocks();
        assertThatThrownBy(() -> locks.election("no-slash", "a"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no-slash");
        assertThatThrownBy(() -> locks.election("/", "a"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'/'");
        assertThatThrownBy(() -> locks.election(path, " "))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("' '");
        assertThatThrownBy(() -> locks.election(path, null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> locks.election(path, "x".repeat(1025)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("1025 bytes");
        FencedLeaderElection a = locks.election(path, "a");
        assertThatThrownBy(() -> a.awaitLeadership(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("PT0S");
        assertThatThrownBy(() -> a.lead(null)).isInstanceOf(NullPointerException.class);
        a.lead(term -> Thread.sleep(60_000));
        assertThatThrownBy(() -> a.lead(term -> {}))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("already a candidate");
    }

    private long awaitLeader(List<BlockingQueue<String>> queues, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            for (BlockingQueue<String> queue : queues) {
                String line = queue.poll(10, TimeUnit.MILLISECONDS);
                if (line != null && line.startsWith("LEADER ")) {
                    return Long.parseLong(line.substring("LEADER ".length()));
                }
            }
        }
        throw new AssertionError("no participant was elected within " + timeout);
    }

    private static List<String> linesUntil(BlockingQueue<String> lines, String last, Duration timeout)
            throws InterruptedException {
        List<String> seen = new ArrayList<>();
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            String line = lines.poll(50, TimeUnit.MILLISECONDS);
            if (line != null) {
                seen.add(line);
                if (line.startsWith(last)) {
                    return seen;
                }
            }
        }
        throw new AssertionError("no line starting with '" + last + "' within " + timeout + "; saw " + seen);
    }

    private void awaitParticipants(int count) throws Exception {
        clients.awaitChildren(path, n -> n.contains("lock-"), count);
    }

    private static FencedUpdate append(int entries) {
        return FencedUpdate.builder(servers.table)
                .key("main")
                .set("value", entries)
                .build();
    }
}
