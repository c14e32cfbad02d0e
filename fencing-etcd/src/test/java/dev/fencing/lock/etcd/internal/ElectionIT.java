package dev.fencing.lock.etcd.internal;

import static dev.fencing.lock.etcd.internal.EtcdTesting.keysUnder;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fencing.lock.FencedLeaderElection;
import dev.fencing.lock.FencedLockListener;
import dev.fencing.lock.Leadership;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.testsupport.EtcdServers;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/** Leader election on a real etcd member: terms, their rising tokens, step-down, tasks, and terms that end. */
class ElectionIT {
    private static final Duration TTL = Duration.ofSeconds(5);
    private static final Duration WAIT = Duration.ofSeconds(10);

    private final List<AutoCloseable> opened = new ArrayList<>();
    private String prefix;
    private Client outsider;

    @BeforeEach
    void start(TestInfo test) {
        prefix = "it/election/" + test.getTestMethod().orElseThrow().getName() + "-" + System.nanoTime();
        outsider = client();
    }

    @AfterEach
    void stop() throws Exception {
        for (int i = opened.size() - 1; i >= 0; i--) {
            opened.get(i).close();
        }
    }

    private Client client() {
        Client client = EtcdTesting.client(EtcdServers.shared().endpoints());
        opened.add(client);
        return client;
    }

    private EtcdLockRegistry registry() {
        EtcdLockRegistry registry = EtcdTesting.registry(client(), prefix, TTL, new FencedLockListener() {});
        opened.add(registry);
        return registry;
    }

    private FencedLeaderElection participant(String id) {
        FencedLeaderElection election = registry().election("leader", id);
        opened.add(election);
        return election;
    }

    @Test
    void oneParticipantLeadsAndItsStepDownHandsTheTermOnWithAGreaterToken() {
        FencedLeaderElection a = participant("host-a");
        FencedLeaderElection b = participant("host-b");

        Leadership first = a.awaitLeadership(WAIT).orElseThrow();

        assertThat(first.participantId()).isEqualTo("host-a");
        assertThat(a.isLeader()).isTrue();
        assertThat(a.currentLeaderId()).contains("host-a");
        assertThat(b.awaitLeadership(Duration.ofMillis(500))).isEmpty();
        assertThat(b.isLeader()).isFalse();

        a.stepDown();

        assertThat(first.isValid()).isFalse();
        assertThat(first.lossCause()).isEqualTo(LeaseLoss.STEPPED_DOWN);
        Leadership second = b.awaitLeadership(WAIT).orElseThrow();
        assertThat(second.token()).isGreaterThan(first.token());
        assertThat(b.currentLeaderId()).contains("host-b");
        assertThat(a.isLeader()).isFalse();
    }

    @Test
    void aTaskLeadsUntilItsKeyIsDeletedThenIsInterruptedAndTheNextParticipantLeadsWithAGreaterToken() throws Exception {
        FencedLeaderElection a = participant("host-a");
        FencedLeaderElection b = participant("host-b");
        AtomicReference<Leadership> led = new AtomicReference<>();
        CountDownLatch leading = new CountDownLatch(1);
        AtomicBoolean interrupted = new AtomicBoolean();
        CompletableFuture<LeaseLoss> over = a.lead(term -> {
            led.set(term);
            leading.countDown();
            try {
                Thread.sleep(Long.MAX_VALUE);
            } catch (InterruptedException e) {
                interrupted.set(true);
                throw e;
            }
        });
        assertThat(leading.await(10, TimeUnit.SECONDS)).isTrue();
        KeyValue key = keysUnder(outsider, prefix).get(0);

        EtcdLockIT.delete(outsider, key);

        assertThat(over.get(10, TimeUnit.SECONDS)).isEqualTo(LeaseLoss.NODE_GONE);
        assertThat(interrupted).isTrue();
        assertThat(led.get().isValid()).isFalse();
        Leadership next = b.awaitLeadership(WAIT).orElseThrow();
        assertThat(next.token()).isGreaterThan(led.get().token());
        assertThat(a.isLeader()).isFalse();
    }

    @Test
    void aTaskThatReturnsEndsItsTermSteppedDownAndDeletesItsKey() throws Exception {
        FencedLeaderElection a = participant("host-a");
        AtomicReference<Leadership> led = new AtomicReference<>();

        LeaseLoss ended = a.lead(led::set).get(10, TimeUnit.SECONDS);

        assertThat(ended).isEqualTo(LeaseLoss.STEPPED_DOWN);
        assertThat(led.get().isValid()).isFalse();
        await().atMost(WAIT).until(() -> keysUnder(outsider, prefix).isEmpty());
        assertThat(a.currentLeaderId()).isEmpty();
        assertThat(a.awaitLeadership(WAIT).orElseThrow().token())
                .isGreaterThan(led.get().token());
    }

    @Test
    void closingTheLocksEndsTheTermAndRefusesToJoin() throws Exception {
        EtcdLockRegistry registry = registry();
        FencedLeaderElection a = registry.election("leader", "host-a");
        CompletableFuture<LeaseLoss> over = a.lead(term -> Thread.sleep(Long.MAX_VALUE));
        await().atMost(WAIT).until(a::isLeader);

        registry.close();

        assertThat(over.get(10, TimeUnit.SECONDS)).isEqualTo(LeaseLoss.LOCKS_CLOSED);
        assertThat(a.isLeader()).isFalse();
        assertThatThrownBy(a::awaitLeadership).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void aStepDownThatReturnsWhileTheGrantIsBeingTakenUpLeavesNoTermBehind() throws Exception {
        EtcdElection a = (EtcdElection) participant("host-a");
        CountDownLatch granted = new CountDownLatch(1);
        CountDownLatch resume = new CountDownLatch(1);
        a.beforeTerm(() -> {
            granted.countDown();
            boolean interrupted = false;
            while (resume.getCount() > 0) {
                try {
                    resume.await();
                } catch (InterruptedException e) {
                    interrupted = true; // the step-down's; kept for the participant
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        });
        CompletableFuture<Leadership> elected = CompletableFuture.supplyAsync(a::awaitLeadership);
        assertThat(granted.await(10, TimeUnit.SECONDS)).isTrue();

        // the participant thread found the candidacy not withdrawn and has not published its term yet
        a.stepDown();
        resume.countDown();

        assertThatThrownBy(() -> elected.get(10, TimeUnit.SECONDS))
                .as("a leadership handed out after stepDown() returned")
                .hasCauseInstanceOf(IllegalStateException.class);
        assertThat(a.leadership()).isEmpty();
        await().atMost(WAIT).until(() -> keysUnder(outsider, prefix).isEmpty());
    }

    /**
     * An {@link Error} (an assertion, an {@code OutOfMemoryError}) on the participant's thread between its grant and
     * its term: the candidacy ends with it, and its key goes with it. Left behind, the key's lease was renewed for as
     * long as the locks lived, and no other participant was ever elected.
     */
    @Test
    void anErrorBetweenGrantAndTermEndsTheCandidacyWithItAndLetsTheKeyGo() throws Exception {
        EtcdElection a = (EtcdElection) participant("host-a");
        FencedLeaderElection b = participant("host-b");
        AssertionError error = new AssertionError("between grant and term");
        AtomicBoolean once = new AtomicBoolean();
        a.beforeTerm(() -> {
            if (once.compareAndSet(false, true)) {
                throw error;
            }
        });

        CompletableFuture<LeaseLoss> over = a.lead(term -> {});

        assertThatThrownBy(() -> over.get(10, TimeUnit.SECONDS)).cause().isSameAs(error);
        assertThat(keysUnder(outsider, prefix)).as("the granted key is gone").isEmpty();
        assertThat(b.awaitLeadership(WAIT))
                .as("the next participant is elected")
                .isPresent();
        assertThat(a.isLeader()).isFalse();
    }

    /**
     * A term ends; its candidacy's thread is still letting go of its key (held here) when the participant awaits
     * leadership again. The documented loop ({@code while (running) { term = awaitLeadership(); while
     * (term.isValid()) ... }}) must get a new term, not the ended one back at once (it would spin on it until the
     * thread had let go).
     */
    @Test
    void awaitingLeadershipWhileAnEndedTermsThreadStillLetsGoGivesANewTermNotTheEndedOne() throws Exception {
        EtcdElection a = (EtcdElection) participant("host-a");
        Leadership first = a.awaitLeadership();
        CountDownLatch leaving = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        opened.add(release::countDown);
        AtomicBoolean heldOnce = new AtomicBoolean();
        a.beforeLeaving(() -> {
            if (heldOnce.compareAndSet(false, true)) {
                leaving.countDown();
                try {
                    release.await(WAIT.toMillis(), TimeUnit.MILLISECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        a.stepDown();
        assertThat(leaving.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(first.isValid()).isFalse();

        AtomicReference<Leadership> next = new AtomicReference<>();
        Thread awaiting = new Thread(() -> next.set(a.awaitLeadership(WAIT).orElse(null)));
        awaiting.start();
        // the call either returned (the ended term) or waits for the ended candidacy to let go
        await().atMost(WAIT).until(() -> !awaiting.isAlive() || awaiting.getState() == Thread.State.TIMED_WAITING);
        release.countDown();
        awaiting.join(WAIT.toMillis());

        assertThat(next.get())
                .as("the term awaitLeadership() returned")
                .isNotNull()
                .isNotSameAs(first);
        assertThat(next.get().isValid()).isTrue();
        assertThat(next.get().token()).isGreaterThan(first.token());
        a.stepDown();
    }

    /**
     * A step-down made while an await is under way, after the candidacy was elected but before the await checked
     * the term, ends that await (as the interface says, and as with ZooKeeper): it must not join the election
     * again behind the step-down's back and come back as leader with a new term.
     */
    @Test
    void aStepDownWhileAnAwaitChecksTheElectedTermEndsTheAwaitInsteadOfJoiningAgain() {
        EtcdLockRegistry registry = registry();
        FencedLeaderElection a = registry.election("leader", "host-a");
        opened.add(a);
        Thread awaiting = Thread.currentThread();
        AtomicBoolean steppedDown = new AtomicBoolean();
        // the await's check of the term it was handed: the step-down lands between its reads
        registry.betweenValidityReads(() -> {
            if (Thread.currentThread() == awaiting && steppedDown.compareAndSet(false, true)) {
                a.stepDown();
            }
        });

        assertThatThrownBy(() -> a.awaitLeadership(WAIT))
                .as("awaitLeadership() across a step-down")
                .isInstanceOf(IllegalStateException.class);
        assertThat(steppedDown).isTrue();
        assertThat(a.isLeader())
                .as("the participant leads after it stepped down")
                .isFalse();
        await().atMost(WAIT).until(() -> keysUnder(outsider, prefix).isEmpty());
    }

    /**
     * A task stuck in a call that does not answer interrupts (a driver's socket read) when its participant steps
     * down: the term ends at once, and the next participant must lead without waiting for the etcd lease to expire
     * (the interface's promise, and ZooKeeper's participant deletes its node in the background for it).
     */
    @Test
    void aStepDownHandsTheTermOnAtOnceWhileTheTaskIgnoresItsInterrupt() throws Exception {
        FencedLeaderElection a = participant("host-a");
        FencedLeaderElection b = participant("host-b");
        AtomicReference<Leadership> led = new AtomicReference<>();
        CountDownLatch leading = new CountDownLatch(1);
        CountDownLatch finish = new CountDownLatch(1);
        opened.add(finish::countDown);
        CompletableFuture<LeaseLoss> over = a.lead(term -> {
            led.set(term);
            leading.countDown();
            while (finish.getCount() > 0) {
                try {
                    finish.await();
                } catch (InterruptedException ignored) {
                    // a call that does not answer interrupts
                }
            }
        });
        assertThat(leading.await(10, TimeUnit.SECONDS)).isTrue();

        a.stepDown();

        assertThat(led.get().isValid()).isFalse();
        Optional<Leadership> next = b.awaitLeadership(Duration.ofSeconds(2));
        assertThat(next)
                .as("the next participant's term within 2 s of the step-down (the etcd lease lives %s)", TTL)
                .isPresent();
        assertThat(next.get().token()).isGreaterThan(led.get().token());
        finish.countDown();
        assertThat(over.get(10, TimeUnit.SECONDS)).isEqualTo(LeaseLoss.STEPPED_DOWN);
    }

    @Test
    void refusesBlankOrOverlongParticipantIds() {
        EtcdLockRegistry registry = registry();
        assertThatThrownBy(() -> registry.election("leader", " "))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("' '");
        assertThatThrownBy(() -> registry.election("leader", "x".repeat(1025)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("1025 bytes");
    }
}
