package dev.fencing.lock.zookeeper.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fencing.lock.FencedLeaderElection;
import dev.fencing.lock.FencedLock;
import dev.fencing.lock.FencedLockException;
import dev.fencing.lock.FencedLockListener;
import dev.fencing.lock.FencedReadWriteLock;
import dev.fencing.lock.Leadership;
import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.LeaseLostException;
import dev.fencing.lock.spi.HeldLease;
import dev.fencing.lock.spi.LeaseHold;
import dev.fencing.lock.spi.PauseDetector;
import dev.fencing.lock.zookeeper.FencedLocks;
import dev.fencing.lock.zookeeper.TokenSource;
import dev.fencing.lock.zookeeper.internal.LockRegistryIT.RecordingListener;
import dev.fencing.testsupport.EmbeddedZooKeeper;
import dev.fencing.testsupport.TcpRelay;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.curator.CuratorZookeeperClient;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.zookeeper.ZooKeeper;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * A lease tells the truth to a check that begins after a pause, a handle replacement or a close, each
 * reproduced deterministically through the registry's test hooks: the detector held where a frozen JVM
 * would hold it, Curator's connection events held back where Curator is late to deliver them.
 */
class LeaseTruthIT {
    private static final int ROUNDS = 30;

    private final List<AutoCloseable> opened = new ArrayList<>();
    private final ExecutorService successorThread = Executors.newSingleThreadExecutor();
    private EmbeddedZooKeeper zk;
    private String path;

    @BeforeEach
    void start(TestInfo test) {
        zk = EmbeddedZooKeeper.builder().build();
        path = "/it/truth/" + test.getTestMethod().orElseThrow().getName();
    }

    @AfterEach
    void stop() throws Exception {
        successorThread.shutdownNow();
        for (int i = opened.size() - 1; i >= 0; i--) {
            opened.get(i).close();
        }
        zk.close();
    }

    /**
     * The detector marks every hold, then moves its tick. A check that read the mark first could read the
     * old mark, lose the processor while the detector marks and ticks, then read the new tick and answer
     * valid after a detected pause. Here the detector runs exactly between the check's two reads.
     */
    @Test
    void aCheckThatBeginsAfterAPauseReadsInvalidEvenWhenTheDetectorMarksAndTicksBetweenItsReads() throws Exception {
        LockRegistry registry = registry(client(), Duration.ofMillis(200));
        Lease lease = registry.lock(path, TokenSource.SEQUENCE).acquire();
        CountDownLatch detectorHeld = new CountDownLatch(1);
        CountDownLatch resume = new CountDownLatch(1);
        registry.beforeDetectorTick(Hooks.once(() -> {
            detectorHeld.countDown();
            resume.await(); // the "pause": this JVM's detector does not run, as in a frozen JVM
        }));
        assertThat(detectorHeld.await(10, TimeUnit.SECONDS)).isTrue();
        PauseDetector.Tick tickBefore = registry.pauses().lastTick();
        await().atMost(Duration.ofSeconds(10)).until(() -> registry.pauses().pausedSince(tickBefore));
        registry.betweenValidityReads(Hooks.once(() -> {
            // the JVM resumes; the detector marks the hold and moves its tick while the check is between reads
            resume.countDown();
            await().atMost(Duration.ofSeconds(10)).until(() -> registry.pauses().lastTick() != tickBefore);
        }));

        boolean valid = lease.isValid();

        assertThat(valid).as("a check that began after the pause").isFalse();
        assertThat(lease.lossCause()).isEqualTo(LeaseLoss.PAUSE_DETECTED);
        lease.close();
    }

    /**
     * An explicit pause tolerance that is not below the session timeout the client negotiated (the builder
     * refuses one only against a session negotiated by then): a stop of this JVM as long as the session, which
     * may have expired it and passed the lock on, read as no pause, and the lease stayed valid after it. The
     * default for that session, a third of it, applies instead. Here the detector is held, as a frozen JVM holds
     * it, for longer than the whole session; a tolerance below the session is kept as given.
     */
    @Test
    void aToleranceNotBelowTheNegotiatedSessionStillEndsALeaseAfterAStopAsLongAsTheSession() throws Exception {
        CuratorFramework client = Hooks.startedClient(zk.connectString(), Duration.ofSeconds(4));
        opened.add(client);
        awaitConnected(client);
        int session = client.getZookeeperClient().getLastNegotiatedSessionTimeoutMs();
        assertThat(session).isEqualTo(4_000);
        LockRegistry belowSession = new LockRegistry(
                client,
                null,
                Duration.ofMillis(3_000),
                new RecordingListener(),
                FencedLocks.DEFAULT_SEQUENCE_WRAP_MARGIN);
        opened.add(belowSession);
        belowSession.lock(path + "/below", TokenSource.SEQUENCE).acquire().close();
        assertThat(belowSession.pauses().tolerance())
                .as("a tolerance below the session")
                .isEqualTo(Duration.ofMillis(3_000));
        LockRegistry registry = new LockRegistry(
                client, null, Duration.ofSeconds(6), new RecordingListener(), FencedLocks.DEFAULT_SEQUENCE_WRAP_MARGIN);
        opened.add(registry);
        Lease lease = registry.lock(path + "/above", TokenSource.SEQUENCE).acquire();
        CountDownLatch detectorHeld = new CountDownLatch(1);
        CountDownLatch resume = new CountDownLatch(1);
        opened.add(resume::countDown);
        registry.beforeDetectorTick(Hooks.once(() -> {
            detectorHeld.countDown();
            resume.await(); // the stop: the detector does not run, as in a frozen JVM
        }));
        assertThat(detectorHeld.await(10, TimeUnit.SECONDS)).isTrue();
        PauseDetector.Tick tickBefore = registry.pauses().lastTick();
        await().atMost(Duration.ofSeconds(10))
                .until(() -> System.nanoTime() - tickBefore.nanos() > TimeUnit.MILLISECONDS.toNanos(session));

        boolean valid = lease.isValid();

        assertThat(valid)
                .as("a lease after a stop longer than its %d ms session", session)
                .isFalse();
        assertThat(lease.lossCause()).isEqualTo(LeaseLoss.PAUSE_DETECTED);
        resume.countDown();
        lease.close();
    }

    /**
     * A check that sees the pause before the detector does ends its own lease, and the listener hears of it on
     * the library's listener thread, as it does of the detector's pauses: never on the thread that checked,
     * which a slow listener would hold up inside {@code isValid()}.
     */
    @Test
    void aPauseACheckSawBeforeTheDetectorIsToldOnTheListenerThread() throws Exception {
        ToldListener listener = new ToldListener();
        LockRegistry registry = registry(client(), Duration.ofMillis(200), listener);
        Lease lease = registry.lock(path, TokenSource.SEQUENCE).acquire();
        CountDownLatch detectorHeld = new CountDownLatch(1);
        CountDownLatch resume = new CountDownLatch(1);
        opened.add(resume::countDown);
        registry.beforeDetectorTick(Hooks.once(() -> {
            detectorHeld.countDown();
            resume.await();
        }));
        assertThat(detectorHeld.await(10, TimeUnit.SECONDS)).isTrue();
        PauseDetector.Tick tickBefore = registry.pauses().lastTick();
        await().atMost(Duration.ofSeconds(10)).until(() -> registry.pauses().pausedSince(tickBefore));

        assertThat(lease.isValid())
                .as("a check across a pause the detector has not seen")
                .isFalse();

        assertThat(lease.lossCause()).isEqualTo(LeaseLoss.PAUSE_DETECTED);
        await().atMost(Duration.ofSeconds(10)).until(() -> listener.told.size() == 1);
        assertThat(listener.told).containsExactly(path + " PAUSE_DETECTED on fenced-lock-listener");
        resume.countDown();
        lease.close();
    }

    /**
     * A check that finds the session ended (Curator replaced its handle; no LOST event and no detector here)
     * ends every lease of that session before the listener hears of any, and the listener hears of each on the
     * library's listener thread: the other lease is never checked, and is told all the same.
     */
    @Test
    void aCheckThatFindsTheSessionEndedEndsEveryLeaseOfItBeforeTheListenerHearsOnTheListenerThread() throws Exception {
        CuratorFramework client = client();
        ToldListener listener = new ToldListener();
        LockRegistry registry = registryWithoutEventsOrDetector(client, listener);
        Lease checked = registry.lock(path + "/0", TokenSource.SEQUENCE).acquire();
        Lease unchecked = registry.lock(path + "/1", TokenSource.SEQUENCE).acquire();
        listener.alsoRecord(unchecked);
        replaceHandle(client);

        assertThat(checked.isValid())
                .as("a lease of the replaced handle's session")
                .isFalse();

        await().atMost(Duration.ofSeconds(10)).until(() -> listener.told.size() == 2);
        assertThat(listener.told)
                .containsExactlyInAnyOrder(
                        path + "/0 SESSION_LOST on fenced-lock-listener, other lease SESSION_LOST",
                        path + "/1 SESSION_LOST on fenced-lock-listener, other lease SESSION_LOST");
        checked.close();
        unchecked.close();
    }

    /**
     * On an expired session or a changed connect string Curator replaces its handle ({@code
     * ConnectionState.reset()}) before it tells anyone LOST; closing the old handle ends the session, so the
     * server deletes the holder's node at once and the next contender is granted while the old holder has
     * heard nothing. Here Curator's events never reach the registry and its detector does not run: the check
     * alone must see the new handle. ({@code InjectedExpiryIT} does the same through an injected expiry with
     * every part of the library running.)
     */
    @Test
    void aLeaseReadsInvalidOnceCuratorReplacedItsHandleThoughNoLostEventArrivedAndTheDetectorDidNotRun()
            throws Exception {
        CuratorFramework client = client();
        LockRegistry registry = registryWithoutEventsOrDetector(client);
        FencedLock next = registry(client(), null).lock(path, TokenSource.SEQUENCE);
        List<String> validAfterTakeover = new ArrayList<>();
        for (int round = 0; round < ROUNDS; round++) {
            Lease old = registry.lock(path, TokenSource.SEQUENCE).acquire();
            Future<Lease> successor = successorThread.submit(() -> next.acquire());
            replaceHandle(client);

            Lease taken = successor.get(30, TimeUnit.SECONDS);

            if (old.isValid()) {
                validAfterTakeover.add("round " + round + ": " + old + " beside " + taken);
            }
            assertThat(taken.token()).isGreaterThan(old.token());
            assertThat(old.lossCause()).isEqualTo(LeaseLoss.SESSION_LOST);
            assertThatThrownBy(old::ensureValid).isInstanceOf(LeaseLostException.class);
            old.close();
            successorThread.submit(taken::close).get(30, TimeUnit.SECONDS);
            awaitConnected(client);
        }
        assertThat(validAfterTakeover).isEmpty();
    }

    @Test
    void aTermReadsEndedOnceCuratorReplacedItsHandleThoughNoLostEventArrivedAndTheDetectorDidNotRun() throws Exception {
        CuratorFramework client = client();
        LockRegistry registry = registryWithoutEventsOrDetector(client);
        FencedLeaderElection a = registry.election(path, TokenSource.SEQUENCE, "a");
        FencedLeaderElection b = registry(client(), null).election(path, TokenSource.SEQUENCE, "b");
        opened.add(a);
        opened.add(b);
        List<String> validAfterTakeover = new ArrayList<>();
        for (int round = 0; round < ROUNDS; round++) {
            Leadership old = a.awaitLeadership(Duration.ofSeconds(30)).orElseThrow();
            Future<Leadership> successor = successorThread.submit(() -> b.awaitLeadership());
            replaceHandle(client);

            Leadership taken = successor.get(30, TimeUnit.SECONDS);

            if (old.isValid() || a.isLeader()) {
                validAfterTakeover.add("round " + round + ": " + old + " beside " + taken);
            }
            assertThat(taken.token()).isGreaterThan(old.token());
            assertThat(old.lossCause()).isEqualTo(LeaseLoss.SESSION_LOST);
            b.stepDown();
            awaitConnected(client);
        }
        assertThat(validAfterTakeover).isEmpty();
    }

    /**
     * Curator's handle replacement moves the generation, then clears its connected flag. A check that read the
     * session first and the connection after could see the old generation and the cleared flag, and name a
     * lost connection where the session is gone (a fresh-clone CI run of the term test above saw it once).
     * Here the replacement runs exactly between the check's two reads.
     */
    @Test
    void aCheckThatStraddlesAHandleReplacementNamesTheLostSession() throws Exception {
        CuratorFramework client = client();
        LockRegistry registry = registryWithoutEventsOrDetector(client);
        Lease lease = registry.lock(path, TokenSource.SEQUENCE).acquire();
        registry.betweenConnectionAndSessionReads(Hooks.once(() -> replaceHandle(client)));

        assertThat(lease.isValid()).isFalse();
        assertThat(lease.lossCause()).isEqualTo(LeaseLoss.SESSION_LOST);
        lease.close();
        awaitConnected(client);
    }

    /**
     * Curator replaced its handle (an expired session) and connected the new one before anyone heard LOST: closing
     * the old handle ended the session, and the server deleted the holder's node with it. {@code verify()} finds
     * the node gone, but the session is what ended the lease, as {@code isValid()} says, and as every other
     * lease of that session reads; once on the new handle, and once while it is still connecting (the check
     * itself fails). The node an operator deletes is NODE_GONE ({@code
     * aListenerThatWaitsForTheWorkerToStopDoesNotHoldUpTheWorkersVerify}).
     */
    @Test
    void aVerifyAfterCuratorReplacedItsHandleNamesTheLostSessionNotTheGoneNode() throws Exception {
        CuratorFramework client = client();
        LockRegistry registry = registryWithoutEventsOrDetector(client);
        for (boolean reconnected : new boolean[] {true, false}) {
            Lease lease = registry.lock(path, TokenSource.SEQUENCE).acquire();
            replaceHandle(client);
            if (reconnected) {
                awaitConnected(client);
            }

            boolean verified = lease.verify();

            assertThat(verified)
                    .as("verify() after the replacement, reconnected: %s", reconnected)
                    .isFalse();
            assertThat(lease.lossCause())
                    .as("the cause after the replacement, reconnected: %s", reconnected)
                    .isEqualTo(LeaseLoss.SESSION_LOST);
            lease.close();
            awaitConnected(client);
        }
    }

    /**
     * A network cut that Curator has not reported (its connection events held back, as a slow listener
     * registered ahead of the registry's holds them back): both ends of the link stay open and say nothing,
     * the client gives up on the server after two thirds of the session timeout, and the server expires the
     * session at the timeout and grants the lock to the next holder. The lease and the term read invalid
     * from the moment the client knew it was not connected (Curator's flag), and stay so beside the
     * successor's grant.
     */
    @Test
    void aLeaseAndATermReadInvalidOnceTheConnectionIsCutThoughCuratorReportedNothing() throws Exception {
        cutConnection(false);
    }

    /**
     * The same cut with ZooKeeper's event thread held (a slow watcher or background callback), so that
     * Curator's flag still says connected: the check reads the handle's own state, which the client moves
     * off {@code CONNECTED} when it starts to reconnect.
     */
    @Test
    void aLeaseAndATermReadInvalidOnceTheHandleStopsBeingConnectedThoughTheEventThreadIsHeld() throws Exception {
        cutConnection(true);
    }

    private void cutConnection(boolean holdEventThread) throws Exception {
        TcpRelay link = TcpRelay.to(zk.port());
        opened.add(link);
        CuratorFramework client = Hooks.startedClient("127.0.0.1:" + link.port());
        opened.add(client);
        LockRegistry registry = registryWithoutEventsOrDetector(client);
        FencedLeaderElection election = registry.election(path + "-election", TokenSource.SEQUENCE, "a");
        opened.add(election);
        Leadership term = election.awaitLeadership(Duration.ofSeconds(30)).orElseThrow();
        Lease old = registry.lock(path, TokenSource.SEQUENCE).acquire();
        FencedLock next = registry(client(), null).lock(path, TokenSource.SEQUENCE);
        ZooKeeper handle = client.getZookeeperClient().getZooKeeper();
        assertThat(old.isValid()).isTrue();
        assertThat(election.isLeader()).isTrue();
        CountDownLatch eventThreadHeld = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        opened.add(release::countDown);
        if (holdEventThread) {
            // a background callback without an executor runs on ZooKeeper's event thread
            client.checkExists()
                    .inBackground((c, event) -> {
                        eventThreadHeld.countDown();
                        release.await();
                    })
                    .forPath("/");
            assertThat(eventThreadHeld.await(30, TimeUnit.SECONDS)).isTrue();
        }

        link.holdBack();
        link.holdBackRequests();
        if (holdEventThread) {
            await().atMost(Duration.ofSeconds(30)).until(() -> handle.getState() != ZooKeeper.States.CONNECTED);
            assertThat(client.getZookeeperClient().isConnected())
                    .as("Curator's flag, its event thread held")
                    .isTrue();
        } else {
            await().atMost(Duration.ofSeconds(30))
                    .until(() -> !client.getZookeeperClient().isConnected());
        }
        boolean validAfterCut = old.isValid();
        boolean leadingAfterCut = term.isValid() || election.isLeader();
        Lease taken = successorThread.submit(() -> next.acquire()).get(60, TimeUnit.SECONDS);

        assertThat(taken.token()).isGreaterThan(old.token());
        assertThat(old.isValid()).as("the cut client's lease, beside " + taken).isFalse();
        assertThat(validAfterCut)
                .as("the lease, once the client was not connected")
                .isFalse();
        assertThat(leadingAfterCut)
                .as("the term, once the client was not connected")
                .isFalse();
        assertThat(old.lossCause()).isEqualTo(LeaseLoss.CONNECTION_SUSPENDED);
        assertThat(term.lossCause()).isEqualTo(LeaseLoss.CONNECTION_SUSPENDED);
        successorThread.submit(taken::close).get(30, TimeUnit.SECONDS);
        release.countDown();
        link.dropConnections(); // the link heals, so that closing what the cut client holds does not wait
    }

    /**
     * Curator's connected flag stuck at false while the handle is connected (the known Curator issue after an
     * expiry, docs/locks.md), set here between the node's creation and the lease's registration: the lease
     * reads the handle's state only, and is valid. Read as a lost connection, the flag would end every new
     * lease and term at once, for as long as it stays stuck.
     */
    @Test
    void aLeaseGrantedWhileCuratorsConnectedFlagIsStuckAtFalseReadsValid() throws Exception {
        CuratorFramework client = client();
        LockRegistry registry = registryWithoutEventsOrDetector(client);
        AtomicBoolean connectedFlag = connectedFlagStuckAtFalseOnRegistering(client, registry);

        Lease lease = registry.lock(path, TokenSource.SEQUENCE).acquire();

        assertThat(client.getZookeeperClient().isConnected()).isFalse();
        assertThat(client.getZookeeperClient().getZooKeeper().getState()).isEqualTo(ZooKeeper.States.CONNECTED);
        assertThat(lease.isValid())
                .as("a lease on a connected handle, Curator's flag stuck")
                .isTrue();
        assertThat(lease.lossCause()).isNull();
        connectedFlag.set(true);
        lease.close();
    }

    /**
     * The same stuck flag, which Curator writes again when the handle next reconnects (set here as that reconnect
     * sets it), and a later cut that clears it (the client gave up on the server) while the handle still reads
     * {@code CONNECTED} (it leaves it only when it starts to reconnect, up to a second or two later) and
     * Curator's SUSPENDED is held back: the lease reads invalid from the flag, as a lease granted with a live
     * flag does. Read from the handle only, it stayed valid until the handle moved, which can be after the
     * server expired the session and granted the lock to the next holder.
     */
    @Test
    void aLeaseGrantedWhileCuratorsFlagWasStuckReadsTheFlagAgainOnceItRecovered() throws Exception {
        CuratorFramework client = client();
        LockRegistry registry = registryWithoutEventsOrDetector(client);
        AtomicBoolean connectedFlag = connectedFlagStuckAtFalseOnRegistering(client, registry);
        Lease lease = registry.lock(path, TokenSource.SEQUENCE).acquire();
        assertThat(lease.isValid()).as("a lease granted with the flag stuck").isTrue();
        connectedFlag.set(true); // the handle reconnected: Curator's flag is live again
        assertThat(lease.isValid()).as("the lease once the flag recovered").isTrue();

        connectedFlag.set(false); // the client gave up on the server

        assertThat(client.getZookeeperClient().getZooKeeper().getState()).isEqualTo(ZooKeeper.States.CONNECTED);
        assertThat(lease.isValid())
                .as("the lease once Curator took the connection for lost")
                .isFalse();
        assertThat(lease.lossCause()).isEqualTo(LeaseLoss.CONNECTION_SUSPENDED);
        connectedFlag.set(true);
        lease.close();
    }

    /**
     * {@code ConnectionState.reset()} bumps the generation, then closes the old handle. An acquire that runs
     * while the resetting thread is off the processor between the two reads the new generation, yet creates
     * its node on the old handle, whose session the reset then closes. The statements of {@code reset()} are
     * run here one by one (Curator 5.9's fields), with the acquire in that gap.
     */
    @Test
    void aLeaseGrantedInsideCuratorsResetReadsInvalidOnceTheResetClosedItsSession() throws Exception {
        CuratorFramework client = client();
        LockRegistry registry = registryWithoutEventsOrDetector(client);
        LockRegistry other = registry(client(), null);
        Object state = field(CuratorZookeeperClient.class, "state").get(client.getZookeeperClient());
        ((AtomicLong) field(state.getClass(), "instanceIndex").get(state)).incrementAndGet();

        Lease lease = registry.lock(path, TokenSource.SEQUENCE).acquire();

        ((AtomicBoolean) field(state.getClass(), "isConnected").get(state)).set(false);
        Object handles = field(state.getClass(), "handleHolder").get(state);
        method(handles.getClass(), "closeAndReset").invoke(handles);
        method(handles.getClass(), "getZooKeeper").invoke(handles);
        Lease taken = successorThread
                .submit(() -> other.lock(path, TokenSource.SEQUENCE).acquire())
                .get(30, TimeUnit.SECONDS);

        assertThat(taken.token()).isGreaterThan(lease.token());
        assertThat(lease.isValid())
                .as("a lease whose session the reset closed, beside " + taken)
                .isFalse();
        assertThat(lease.lossCause()).isEqualTo(LeaseLoss.SESSION_LOST);
        lease.close();
        successorThread.submit(taken::close).get(30, TimeUnit.SECONDS);
    }

    /** Closing the Curator client closes its session, with no LOST event and no new handle generation. */
    @Test
    void aLeaseReadsInvalidOnceItsCuratorClientWasClosed() throws Exception {
        CuratorFramework client = client();
        LockRegistry registry = registry(client, null);
        Lease lease = registry.lock(path, TokenSource.SEQUENCE).acquire();
        FencedLock next = registry(client(), null).lock(path, TokenSource.SEQUENCE);

        client.close();
        Lease taken = successorThread.submit(() -> next.acquire()).get(30, TimeUnit.SECONDS);

        assertThat(taken.token()).isGreaterThan(lease.token());
        assertThat(lease.isValid())
                .as("the lease of a closed client, beside " + taken)
                .isFalse();
        assertThat(lease.lossCause()).isEqualTo(LeaseLoss.SESSION_LOST);
        successorThread.submit(taken::close).get(30, TimeUnit.SECONDS);
    }

    @Test
    void aTermReadsEndedOnceItsCuratorClientWasClosed() throws Exception {
        CuratorFramework client = client();
        FencedLeaderElection a = registry(client, null).election(path, TokenSource.SEQUENCE, "a");
        FencedLeaderElection b = registry(client(), null).election(path, TokenSource.SEQUENCE, "b");
        opened.add(b);
        Leadership old = a.awaitLeadership(Duration.ofSeconds(30)).orElseThrow();

        client.close();
        Leadership taken = b.awaitLeadership(Duration.ofSeconds(30)).orElseThrow();

        assertThat(taken.token()).isGreaterThan(old.token());
        assertThat(old.isValid())
                .as("the term of a closed client, beside " + taken)
                .isFalse();
        assertThat(a.isLeader()).isFalse();
    }

    @Test
    void aHoldIsReleasedByItsOwnerThreadOnlyEvenThroughTheSpi() throws Exception {
        LockRegistry registry = registry(client(), null);
        Lease lease = registry.lock(path, TokenSource.SEQUENCE).acquire();
        LeaseHold hold = ((HeldLease) lease).hold(); // what a listener's view would reach

        CompletableFuture<Void> elsewhere = CompletableFuture.runAsync(hold::exit);

        assertThatThrownBy(elsewhere::join)
                .hasCauseInstanceOf(IllegalStateException.class)
                .hasMessageContaining("by the thread that acquired it");
        assertThat(lease.isValid()).isTrue();
        lease.close();
        assertThat(lease.lossCause()).isEqualTo(LeaseLoss.RELEASED);
        assertThat(registry.lock(path, TokenSource.SEQUENCE).tryAcquire(Duration.ofSeconds(5)))
                .as("the lock, free once its owner closed the lease")
                .hasValueSatisfying(next -> {
                    assertThat(next.token()).isGreaterThan(lease.token());
                    next.close();
                });
    }

    @Test
    void aClosedLeaseReadsInvalidAsReleasedWhileTheHoldersOtherReEntrantLeaseStaysValid() {
        LockRegistry registry = registry(client(), null);
        FencedLock lock = registry.lock(path, TokenSource.SEQUENCE);
        Lease outer = lock.acquire();
        Lease inner = lock.acquire();
        Lease view = new HeldLease(((HeldLease) outer).hold(), true); // what a listener is given

        inner.close();

        assertThat(inner.isValid()).isFalse();
        assertThat(inner.lossCause()).isEqualTo(LeaseLoss.RELEASED);
        assertThatThrownBy(inner::ensureValid)
                .isInstanceOf(LeaseLostException.class)
                .hasMessageContaining("was closed")
                .satisfies(e -> assertThat(((LeaseLostException) e).lossCause()).isEqualTo(LeaseLoss.RELEASED));
        assertThat(outer.isValid()).isTrue();
        assertThat(view.isValid()).isTrue();

        outer.close();

        assertThat(outer.isValid()).isFalse();
        assertThat(outer.lossCause()).isEqualTo(LeaseLoss.RELEASED);
        assertThat(view.isValid())
                .as("the listener's view once the last lease closed")
                .isFalse();
        assertThat(view.lossCause()).isEqualTo(LeaseLoss.RELEASED);
        view.close(); // a view cannot release anything
        outer.close(); // twice is harmless
    }

    @Test
    void aLeaseKeepsTheCauseItHadWhenItWasClosed() {
        LockRegistry registry = registry(client(), null);
        FencedLock lock = registry.lock(path, TokenSource.SEQUENCE);
        Lease outer = lock.acquire();
        Lease inner = lock.acquire();
        inner.close();
        registry.close(); // the shared hold is lost after the inner lease was closed

        outer.close();

        assertThat(outer.isValid()).isFalse();
        assertThat(outer.lossCause()).as("lost, then closed").isEqualTo(LeaseLoss.LOCKS_CLOSED);
        assertThat(inner.lossCause()).as("closed, then its hold lost").isEqualTo(LeaseLoss.RELEASED);
    }

    /**
     * A listener that acts on a loss by telling the holder's worker to stop and waiting until it has (the
     * listener's javadoc: stop writing under its token), while the worker itself verifies the lease and finds
     * its node deleted. Told on the worker's own thread, inside {@code verify()}, the listener waited for the
     * very thread it ran on, and {@code verify()} never answered.
     */
    @Test
    void aListenerThatWaitsForTheWorkerToStopDoesNotHoldUpTheWorkersVerify() throws Exception {
        WaitingListener listener = new WaitingListener();
        opened.add(listener.workerStopped::countDown);
        LockRegistry registry = registry(client(), Duration.ofHours(1), listener);
        registry.watchNodes(false); // verify() is what finds the delete
        CuratorFramework operator = client();
        CountDownLatch acquired = new CountDownLatch(1);
        AtomicReference<String> node = new AtomicReference<>();
        CountDownLatch deleted = new CountDownLatch(1);

        Future<Boolean> worker = successorThread.submit(() -> {
            try (Lease lease = registry.lock(path, TokenSource.SEQUENCE).acquire()) {
                node.set(((Hold) ((HeldLease) lease).hold()).nodePath);
                acquired.countDown();
                deleted.await();
                boolean verified = lease.verify();
                listener.workerStopped.countDown();
                return verified;
            }
        });
        assertThat(acquired.await(10, TimeUnit.SECONDS)).isTrue();
        operator.delete().forPath(node.get());
        deleted.countDown();

        assertThat(worker.get(10, TimeUnit.SECONDS))
                .as("verify() of a lease whose node was deleted")
                .isFalse();
        await().atMost(Duration.ofSeconds(10)).until(() -> listener.toldOn.size() == 1);
        assertThat(listener.toldOn).containsExactly("NODE_GONE on fenced-lock-listener");
    }

    /**
     * The same listener, and a grant that is invalid from the start (Curator replaced its handle between the
     * node's creation and the registration): told on the acquiring thread, the listener waited for that thread,
     * and the acquire never returned, its node held.
     */
    @Test
    void aListenerThatWaitsForTheWorkerToStopDoesNotHoldUpTheWorkersAcquire() throws Exception {
        WaitingListener listener = new WaitingListener();
        opened.add(listener.workerStopped::countDown);
        CuratorFramework client = client();
        LockRegistry registry = registry(client, Duration.ofHours(1), listener);
        registry.beforeRegistering(Hooks.once(() -> replaceHandle(client)));

        Future<LeaseLoss> worker = successorThread.submit(() -> {
            try (Lease lease = registry.lock(path, TokenSource.SEQUENCE).acquire()) {
                listener.workerStopped.countDown();
                return lease.lossCause();
            }
        });

        assertThat(worker.get(10, TimeUnit.SECONDS))
                .as("the loss of a grant invalid from the start")
                .isEqualTo(LeaseLoss.SESSION_LOST);
        await().atMost(Duration.ofSeconds(10)).until(() -> listener.toldOn.size() == 1);
        assertThat(listener.toldOn).containsExactly("SESSION_LOST on fenced-lock-listener");
    }

    /** Records the thread it is told on, then waits until the worker says it stopped. */
    private static final class WaitingListener implements FencedLockListener {
        final CountDownLatch workerStopped = new CountDownLatch(1);
        final List<String> toldOn = new CopyOnWriteArrayList<>();

        @Override
        public void leaseInvalidated(Lease lease, LeaseLoss cause) {
            toldOn.add(cause + " on " + Thread.currentThread().getName());
            try {
                workerStopped.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Records each invalidation with the thread it was told on, and the cause another lease had by then. */
    private static final class ToldListener implements FencedLockListener {
        final List<String> told = new CopyOnWriteArrayList<>();
        private volatile Lease other;

        void alsoRecord(Lease otherLease) {
            this.other = otherLease;
        }

        @Override
        public void leaseInvalidated(Lease lease, LeaseLoss cause) {
            Lease o = other;
            // the other lease's mark as it stands (lossCause() would check it, and so mark it, itself)
            told.add(
                    lease.path() + " " + cause + " on " + Thread.currentThread().getName()
                            + (o == null
                                    ? ""
                                    : ", other lease " + ((HeldLease) o).hold().loss()));
        }
    }

    private LockRegistry registryWithoutEventsOrDetector(CuratorFramework client) {
        return registryWithoutEventsOrDetector(client, new RecordingListener());
    }

    private LockRegistry registryWithoutEventsOrDetector(CuratorFramework client, FencedLockListener listener) {
        LockRegistry registry = new LockRegistry(
                LockRegistryIT.heldBackConnectionEvents(client),
                null,
                Duration.ofHours(1), // the held detector must not read as a pause
                listener,
                FencedLocks.DEFAULT_SEQUENCE_WRAP_MARGIN);
        opened.add(registry);
        registry.keepToleranceAboveSession();
        registry.watchNodes(false); // what a check alone finds, without the watch on the held node
        CountDownLatch never = new CountDownLatch(1);
        opened.add(never::countDown);
        registry.beforeDetectorTick(() -> {
            try {
                never.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        return registry;
    }

    /**
     * An operator deletes the leader's node (a lock parent deleted with its children does the same): the next
     * participant is elected with a greater token, and the old term must read invalid once the delete is
     * seen (a watch on the held node), whether or not anyone calls verify(). Without the watch it read valid
     * beside the new leader until the session ended.
     */
    @Test
    void aLeaderWhoseNodeAnOperatorDeletedReadsInvalidOnceTheDeleteIsSeen() throws Exception {
        RecordingListener heard = new RecordingListener();
        LockRegistry first = registry(client(), Duration.ofSeconds(2), heard);
        LockRegistry second = registry(client(), Duration.ofSeconds(2));
        FencedLeaderElection a = first.election(path, TokenSource.SEQUENCE, "a");
        FencedLeaderElection b = second.election(path, TokenSource.SEQUENCE, "b");
        Leadership aTerm = a.awaitLeadership();
        CompletableFuture<Leadership> bTerm = CompletableFuture.supplyAsync(b::awaitLeadership, successorThread);
        CuratorFramework operator = client();
        operator.delete().forPath(firstOfTwo(operator, "lock-"));

        Leadership next = bTerm.get(10, TimeUnit.SECONDS);
        assertThat(next.token()).isGreaterThan(aTerm.token());
        await().atMost(Duration.ofSeconds(10))
                .alias("the old term beside the new leader's " + next)
                .until(() -> !aTerm.isValid() && !a.isLeader());
        assertThat(aTerm.lossCause()).isEqualTo(LeaseLoss.NODE_GONE);
        assertThat(next.isValid()).isTrue();
    }

    /**
     * The write node is deleted by hand and another writer has the lock, and the delete's event is held back
     * on Curator's event thread: the write lease has not seen it, and a downgrade must still not put a reader
     * next to the new writer (its transaction checks the write node).
     */
    @Test
    void aWriteNodeThatIsGoneCannotBeDowngradedFromBeforeTheLeaseSeesTheDelete() throws Exception {
        CuratorFramework client = client();
        LockRegistry registry = registry(client, Duration.ofSeconds(2));
        FencedReadWriteLock lock = registry.readWriteLock(path, TokenSource.SEQUENCE);
        FencedReadWriteLock other = registry(client(), Duration.ofSeconds(2)).readWriteLock(path, TokenSource.SEQUENCE);
        CountDownLatch seen = new CountDownLatch(1);
        CountDownLatch tell = new CountDownLatch(1);
        registry.beforeNodeGone(Hooks.once(() -> {
            seen.countDown();
            tell.await();
        }));
        try (Lease write = lock.writeLock().acquire()) {
            CompletableFuture<Lease> nextWriter =
                    CompletableFuture.supplyAsync(() -> other.writeLock().acquire(), successorThread);
            client.delete().forPath(firstOfTwo(client, "__WRIT__"));
            Lease next = nextWriter.get(10, TimeUnit.SECONDS);
            assertThat(seen.await(10, TimeUnit.SECONDS)).isTrue();
            assertThat(write.isValid()).as("the delete's event held back").isTrue();

            assertThatThrownBy(() -> lock.readLock().acquire())
                    .isInstanceOf(LeaseLostException.class)
                    .hasMessageContaining(Long.toString(write.token()));
            assertThat(write.lossCause()).isEqualTo(LeaseLoss.NODE_GONE);
            tell.countDown();
            assertThat(next.verify()).as("the next writer holds alone").isTrue();
            assertThat(client.getChildren().forPath(path)).noneMatch(n -> n.contains("__READ__"));
            successorThread.submit(next::close).get(10, TimeUnit.SECONDS);
        } finally {
            tell.countDown();
        }
    }

    /**
     * A downgrade whose thread carries an interrupt: the transaction that creates the read node is sent, the
     * wait for its reply is interrupted, and the acquire fails, while the server creates the read node all
     * the same, in the write node's place and unknown to Curator. It must be deleted: left there, it held
     * every writer back, this thread's too, until the session ended.
     */
    @Test
    void anInterruptedDowngradeLeavesNoReadNodeThatHoldsWritersBack() throws Exception {
        CuratorFramework client = client();
        FencedReadWriteLock mine = registry(client, Duration.ofSeconds(2)).readWriteLock(path, TokenSource.SEQUENCE);
        FencedReadWriteLock other = registry(client(), Duration.ofSeconds(2)).readWriteLock(path, TokenSource.SEQUENCE);
        Lease write = mine.writeLock().acquire();
        Thread.currentThread().interrupt();
        try {
            assertThatThrownBy(() -> mine.readLock().acquire()).isInstanceOf(FencedLockException.class);
        } finally {
            Thread.interrupted();
        }
        write.close();

        await().atMost(Duration.ofSeconds(10))
                .alias("no read node left behind by the failed downgrade")
                .until(() -> client.getChildren().forPath(path).stream().noneMatch(n -> n.contains("__READ__")));
        Optional<Lease> next = other.writeLock().tryAcquire(Duration.ofSeconds(5));
        next.ifPresent(Lease::close);
        assertThat(next).as("another writer gets the lock").isPresent();
    }

    /**
     * The node is gone when the watch is set (an operator's delete within the first 100 ms; equally a release
     * that lands between the round's check of the hold and the server's answer). An exists() would answer
     * NONODE and leave a watch for the node's creation, which never comes (a unique name): that watch, and
     * through its callback the hold, its lock, listener and registry, stayed in the client (and one watch on
     * the server) for the rest of the session.
     */
    @Test
    void aNodeGoneBeforeItsWatchIsSetLeavesNoWatchBehind() throws Exception {
        CuratorFramework client = client();
        LockRegistry registry = registry(client, Duration.ofHours(1));
        CountDownLatch held = new CountDownLatch(1);
        CountDownLatch resume = new CountDownLatch(1);
        opened.add(resume::countDown);
        registry.beforeDetectorTick(Hooks.once(() -> {
            held.countDown();
            resume.await();
        }));
        assertThat(held.await(10, TimeUnit.SECONDS)).isTrue();
        Lease lease = registry.lock(path, TokenSource.SEQUENCE).acquire();
        Hold hold = (Hold) ((HeldLease) lease).hold();
        client().delete().forPath(hold.nodePath); // the operator, before the watch is armed
        resume.countDown();

        await().atMost(Duration.ofSeconds(10)).until(() -> hold.loss() == LeaseLoss.NODE_GONE);
        lease.close();

        ZooKeeper handle = client.getZookeeperClient().getZooKeeper();
        assertThat(existWatches(handle))
                .as("exists watches left on the session after the lease ended and was closed")
                .doesNotContain(hold.nodePath);
    }

    /**
     * A downgrade's transaction is applied but its reply is lost; the write node is deleted before Curator's
     * retry (an operator, the very case NODE_GONE is about); the retried transaction fails its check with
     * NoNode, and the downgrade throws LeaseLostException. The first attempt's read node sorts in the write
     * node's place, unknown to Curator, and held every writer back until the session ended, as after an
     * interrupted downgrade (LeaseTruthIT): it must be deleted on every failure.
     */
    @Test
    void aDowngradeWhoseRetryFindsTheWriteNodeGoneLeavesNoReadNodeBehind() throws Exception {
        TcpRelay link = TcpRelay.to(zk.port());
        opened.add(link);
        CuratorFramework client = Hooks.startedClient("127.0.0.1:" + link.port());
        opened.add(client);
        FencedReadWriteLock mine = registry(client, Duration.ofSeconds(2)).readWriteLock(path, TokenSource.SEQUENCE);
        FencedReadWriteLock other = registry(client(), Duration.ofSeconds(2)).readWriteLock(path, TokenSource.SEQUENCE);
        CuratorFramework operator = client();

        Lease write = successorThread.submit(() -> mine.writeLock().acquire()).get(10, TimeUnit.SECONDS);
        String writeNode = ((Hold) ((HeldLease) write).hold()).nodePath;
        link.holdBack(); // the server's replies are lost from here
        Future<Lease> downgrade = successorThread.submit(() -> mine.readLock().acquire());
        await().atMost(Duration.ofSeconds(10))
                .alias("the downgrade's transaction applied")
                .until(() -> operator.getChildren().forPath(path).stream().anyMatch(n -> n.contains("__READ__")));
        operator.delete().forPath(writeNode);
        link.dropConnections(); // same session reconnects; Curator retries the transaction

        assertThatThrownBy(() -> downgrade.get(30, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class)
                .hasCauseInstanceOf(LeaseLostException.class); // the retry's check: NoNode
        successorThread.submit(write::close).get(10, TimeUnit.SECONDS);

        await().atMost(Duration.ofSeconds(10))
                .alias("no read node left behind by the failed downgrade: "
                        + operator.getChildren().forPath(path))
                .until(() -> operator.getChildren().forPath(path).stream().noneMatch(n -> n.contains("__READ__")));
        Optional<Lease> next = other.writeLock().tryAcquire(Duration.ofSeconds(5));
        next.ifPresent(Lease::close);
        assertThat(next).as("another writer gets the lock").isPresent();
    }

    /**
     * Someone writes the held node's data (Curator's {@code Revoker} does, to ask a holder to let go), then deletes
     * the node, and another client takes the lock. A getData watch fires once, here on the data change: left at
     * that, the deletion went unseen and the lease read valid beside the next holder until its session ended.
     */
    @Test
    void aNodeDeletedAfterItsDataWasWrittenStillEndsTheLease() throws Exception {
        CuratorFramework client = client();
        Lease lease = registry(client, Duration.ofHours(1))
                .lock(path, TokenSource.SEQUENCE)
                .acquire();
        String node = ((Hold) ((HeldLease) lease).hold()).nodePath;
        ZooKeeper handle = client.getZookeeperClient().getZooKeeper();
        await().atMost(Duration.ofSeconds(10))
                .alias("the watch on the held node")
                .until(() -> dataWatches(handle).contains(node));
        CuratorFramework operator = client();
        Revoker.attemptRevoke(operator, node); // writes __REVOKE__ as the node's data
        operator.delete().forPath(node);
        Optional<Lease> next = registry(client(), Duration.ofHours(1))
                .lock(path, TokenSource.SEQUENCE)
                .tryAcquire(Duration.ofSeconds(5));
        assertThat(next).as("the next holder").isPresent();

        await().atMost(Duration.ofSeconds(5))
                .alias("the old lease beside the next holder's " + next.orElseThrow())
                .until(() -> !lease.isValid());
        assertThat(lease.lossCause()).isEqualTo(LeaseLoss.NODE_GONE);
        next.orElseThrow().close();
        lease.close();
    }

    /**
     * A lease granted while Curator's connected flag is stuck at false (the known Curator issue after an expiry,
     * docs/locks.md: the flag false, Curator's state LOST, the handle connected) reads valid, and its node must
     * still be watched. Set through Curator, the watch waited for the flag (every background call checks it),
     * gave up with CONNECTIONLOSS once Curator's retries were spent (Curator's SUSPENDED for it is not posted
     * after LOST), and was never tried again: an operator deleted the node, another client took the lock, and
     * the lease read valid beside it for as long as the session lived.
     */
    @Test
    void aNodeDeletedWhileCuratorsConnectedFlagIsStuckStillEndsTheLease() throws Exception {
        CuratorFramework client = client();
        LockRegistry registry = registry(client, Duration.ofHours(1));
        Object state = field(CuratorZookeeperClient.class, "state").get(client.getZookeeperClient());
        AtomicBoolean connectedFlag =
                (AtomicBoolean) field(state.getClass(), "isConnected").get(state);
        Object states = field(client.getClass(), "connectionStateManager").get(client);
        Field current = field(states.getClass(), "currentConnectionState");
        opened.add(() -> {
            connectedFlag.set(true);
            current.set(states, ConnectionState.CONNECTED);
        });
        registry.beforeRegistering(Hooks.once(() -> {
            // as Curator leaves it: LOST after RECONNECTED, the flag false (no events: the registry's are past)
            current.set(states, ConnectionState.LOST);
            connectedFlag.set(false);
        }));
        Lease lease = registry.lock(path, TokenSource.SEQUENCE).acquire();
        assertThat(lease.isValid())
                .as("a lease on a connected handle, Curator's flag stuck")
                .isTrue();

        client().delete().forPath(((Hold) ((HeldLease) lease).hold()).nodePath);
        Optional<Lease> next = registry(client(), Duration.ofHours(1))
                .lock(path, TokenSource.SEQUENCE)
                .tryAcquire(Duration.ofSeconds(5));
        assertThat(next).as("the next holder").isPresent();

        await().atMost(Duration.ofSeconds(15))
                .alias("the old lease beside the next holder's " + next.orElseThrow())
                .until(() -> !lease.isValid());
        assertThat(lease.lossCause()).isEqualTo(LeaseLoss.NODE_GONE);
        next.orElseThrow().close();
        lease.close();
    }

    /**
     * The request that sets the watch is lost with the connection (here: it never reaches the server, then the
     * link drops), and the session reconnects. No check ran while the client was cut off, and Curator's
     * SUSPENDED is held back (an application's slow listener ahead of the registry's holds it back as long as it
     * likes): the lease is rightly valid, its session and node being there. Its node must still be watched:
     * the failed request left no watch, and a deletion by someone else went unseen beside the next holder.
     */
    @Test
    void aWatchLostWithTheConnectionIsSetAgainOnceTheSessionReconnects() throws Exception {
        TcpRelay link = TcpRelay.to(zk.port());
        opened.add(link);
        CuratorFramework client = Hooks.startedClient("127.0.0.1:" + link.port());
        opened.add(client);
        LockRegistry registry = new LockRegistry(
                LockRegistryIT.heldBackConnectionEvents(client),
                null,
                Duration.ofHours(1),
                new RecordingListener(),
                FencedLocks.DEFAULT_SEQUENCE_WRAP_MARGIN);
        opened.add(registry);
        registry.keepToleranceAboveSession();
        CountDownLatch held = new CountDownLatch(1);
        CountDownLatch resume = new CountDownLatch(1);
        opened.add(resume::countDown);
        AtomicLong rounds = new AtomicLong();
        Runnable holdOnce = Hooks.once(() -> {
            held.countDown();
            resume.await();
        });
        registry.beforeDetectorTick(() -> {
            holdOnce.run();
            rounds.incrementAndGet();
        });
        assertThat(held.await(10, TimeUnit.SECONDS)).isTrue();
        Lease lease = registry.lock(path, TokenSource.SEQUENCE).acquire();
        Hold hold = (Hold) ((HeldLease) lease).hold();
        await().atMost(Duration.ofSeconds(10))
                .until(() -> System.nanoTime() - hold.grantedAtNanos >= NodeWatches.WATCH_AFTER_NANOS);

        link.holdBackRequests(); // the watch's request never reaches the server
        long roundsBefore = rounds.get();
        resume.countDown(); // the round that sets the watch
        await().atMost(Duration.ofSeconds(10)).until(() -> rounds.get() >= roundsBefore + 2);
        CountDownLatch reconnected = new CountDownLatch(1);
        client.getConnectionStateListenable().addListener((c, newState) -> {
            if (newState == ConnectionState.RECONNECTED) {
                reconnected.countDown();
            }
        });
        link.dropConnections(); // the request fails with CONNECTIONLOSS; the same session reconnects
        assertThat(reconnected.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(client.getZookeeperClient().getZooKeeper().getSessionId()).isEqualTo(hold.sessionId);

        client().delete().forPath(hold.nodePath);
        Optional<Lease> next = registry(client(), Duration.ofHours(1))
                .lock(path, TokenSource.SEQUENCE)
                .tryAcquire(Duration.ofSeconds(5));
        assertThat(next).as("the next holder").isPresent();

        await().atMost(Duration.ofSeconds(10))
                .alias("the old lease beside the next holder's " + next.orElseThrow())
                .until(() -> !lease.isValid());
        assertThat(lease.lossCause()).isEqualTo(LeaseLoss.NODE_GONE);
        next.orElseThrow().close();
        lease.close();
    }

    @SuppressWarnings("unchecked")
    private static List<String> dataWatches(ZooKeeper handle) throws Exception {
        Method method = ZooKeeper.class.getDeclaredMethod("getDataWatches");
        method.setAccessible(true);
        return (List<String>) method.invoke(handle);
    }

    @SuppressWarnings("unchecked")
    private static List<String> existWatches(ZooKeeper handle) throws Exception {
        Method method = ZooKeeper.class.getDeclaredMethod("getExistWatches");
        method.setAccessible(true);
        return (List<String>) method.invoke(handle);
    }

    /**
     * Waits until the lock path has two nodes named with {@code kind} (the holder's and a waiter's), then
     * returns the holder's: the first in sequence order.
     */
    private String firstOfTwo(CuratorFramework client, String kind) {
        await().atMost(Duration.ofSeconds(10))
                .until(() -> client.getChildren().forPath(path).stream()
                                .filter(n -> n.contains(kind))
                                .count()
                        == 2);
        try {
            return path + "/"
                    + client.getChildren().forPath(path).stream()
                            .filter(n -> n.contains(kind))
                            .min(java.util.Comparator.comparing(n -> n.substring(n.lastIndexOf(kind))))
                            .orElseThrow();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private LockRegistry registry(CuratorFramework client, Duration pauseTolerance) {
        return registry(client, pauseTolerance, new RecordingListener());
    }

    private LockRegistry registry(CuratorFramework client, Duration pauseTolerance, FencedLockListener listener) {
        LockRegistry registry =
                new LockRegistry(client, null, pauseTolerance, listener, FencedLocks.DEFAULT_SEQUENCE_WRAP_MARGIN);
        opened.add(registry);
        registry.keepToleranceAboveSession(); // an hour's tolerance here holds the detector without a pause
        return registry;
    }

    private CuratorFramework client() {
        CuratorFramework client = Hooks.startedClient(zk.connectString());
        opened.add(client);
        return client;
    }

    /** What Curator does on an expired session or a changed connect string: a new handle, the old one closed. */
    private static void replaceHandle(CuratorFramework client) throws Exception {
        client.getZookeeperClient().reset();
    }

    private static void awaitConnected(CuratorFramework client) throws InterruptedException {
        assertThat(client.getZookeeperClient().blockUntilConnectedOrTimedOut()).isTrue();
    }

    /**
     * Curator's connected flag of {@code client}, which the registry sets to false (stuck) once, between the next
     * node's creation and its lease's registration; it is set true again when the test ends.
     */
    private AtomicBoolean connectedFlagStuckAtFalseOnRegistering(CuratorFramework client, LockRegistry registry)
            throws Exception {
        Object state = field(CuratorZookeeperClient.class, "state").get(client.getZookeeperClient());
        AtomicBoolean connectedFlag =
                (AtomicBoolean) field(state.getClass(), "isConnected").get(state);
        opened.add(() -> connectedFlag.set(true));
        registry.beforeRegistering(Hooks.once(() -> connectedFlag.set(false)));
        return connectedFlag;
    }

    private static Field field(Class<?> type, String name) throws NoSuchFieldException {
        Field field = type.getDeclaredField(name);
        field.setAccessible(true);
        return field;
    }

    private static Method method(Class<?> type, String name) throws NoSuchMethodException {
        Method method = type.getDeclaredMethod(name);
        method.setAccessible(true);
        return method;
    }
}
