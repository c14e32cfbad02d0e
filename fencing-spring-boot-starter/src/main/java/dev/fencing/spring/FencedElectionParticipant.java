package dev.fencing.spring;

import dev.fencing.lock.FencedLeaderElection;
import dev.fencing.lock.Leadership;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.zookeeper.FencedLocks;
import dev.fencing.lock.zookeeper.TokenSource;
import dev.fencing.spring.internal.ZooKeeperLockService;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.SmartLifecycle;

/**
 * This instance's participant in a leader election ({@code FencedLeaderElection}) on the {@link LockService},
 * ZooKeeper's or etcd's: it joins
 * when the application context starts, publishes a {@link TermStartedEvent} when elected and a {@link
 * TermEndedEvent} when the term ends (both carrying the term's fence token), joins again after each term, and
 * steps down when the context stops, so that the next instance takes over at once instead of after a session
 * timeout. The starter makes one from {@code fencing.election.*} when {@code fencing.election.path} is set.
 *
 * <pre>{@code
 * @EventListener
 * void leading(TermStartedEvent event) {
 *     ledger.appendOpening(event.token()); // refused by the resource once a later term has written
 * }
 * // anywhere: participant.leadership().ifPresent(term -> ledger.append(batch, term.token()));
 * }</pre>
 *
 * <p><b>What a term guarantees</b> is what a lock grant does: while it is valid as far as this process can
 * tell (connection events, the pause detector), no other participant has been elected after it; a leader
 * frozen past its session timeout learns of its end only when it runs again. The token is what protects the
 * resource: every later term's is greater, and a fenced resource refuses the old one's writes once a later
 * term's were accepted.
 *
 * <p><b>Events and threads.</b> Both events are published on the participant's own thread. A {@code
 * TermStartedEvent} listener runs as part of the term: it is interrupted when the term ends; if it throws, the
 * term ends (stepped down) and the participant joins again. A {@code TermEndedEvent} is published after the
 * term is invalid and its node deleted. A candidacy that fails (ZooKeeper unreachable beyond the client's
 * retries) is logged at WARN and joined again after {@link #REJOIN_DELAY}.
 *
 * <p>Thread-safe. {@link #stop()} waits up to {@link #STOP_TIMEOUT} for the ended event to be published.
 */
public final class FencedElectionParticipant implements SmartLifecycle {
    private static final Logger LOG = LoggerFactory.getLogger(FencedElectionParticipant.class);

    /** How long after a failed candidacy the participant joins again. */
    public static final Duration REJOIN_DELAY = Duration.ofSeconds(1);

    /** How often a served term looks at itself, besides being interrupted at its end. */
    private static final Duration TERM_CHECK = Duration.ofMillis(100);

    /** How long {@link #stop()} waits for the current term to end and its event to be published. */
    public static final Duration STOP_TIMEOUT = Duration.ofSeconds(10);

    private final LockService locks;
    private final String path;
    private final String participantId;
    private final TokenSource tokenSource; // null: the locks' default
    private final ApplicationEventPublisher events;
    private final boolean autoStartup;

    private final Object monitor = new Object();
    private FencedLeaderElection election; // guarded by monitor
    private CompletableFuture<Void> candidacy; // guarded by monitor; completes after its ended event
    private boolean running; // guarded by monitor

    /**
     * @param tokenSource the terms' token source, or {@code null} for the {@code FencedLocks}' default
     * @throws IllegalArgumentException if the path or participant id is empty
     */
    public FencedElectionParticipant(
            FencedLocks locks,
            String path,
            String participantId,
            TokenSource tokenSource,
            ApplicationEventPublisher events,
            boolean autoStartup) {
        this(
                new ZooKeeperLockService(Objects.requireNonNull(locks, "locks")),
                path,
                participantId,
                tokenSource,
                events,
                autoStartup);
    }

    /**
     * On {@code locks}, ZooKeeper's or etcd's (the starter's {@link LockService} bean).
     *
     * @param tokenSource the terms' token source on ZooKeeper, or {@code null} for the {@code FencedLocks}' default
     *     (and on etcd, whose terms' tokens are the leader key's create revision)
     * @throws IllegalArgumentException if the path or participant id is empty
     * @throws IllegalStateException if a token source is named on a lock service other than ZooKeeper
     */
    public FencedElectionParticipant(
            LockService locks,
            String path,
            String participantId,
            TokenSource tokenSource,
            ApplicationEventPublisher events,
            boolean autoStartup) {
        this.locks = Objects.requireNonNull(locks, "locks");
        if (tokenSource != null && !(locks instanceof ZooKeeperLockService)) {
            throw new IllegalStateException("fencing.election.token-source is " + tokenSource + ", a ZooKeeper"
                    + " setting, but the lock service is " + locks.name() + ": remove it");
        }
        this.path = Objects.requireNonNull(path, "path");
        this.participantId = Objects.requireNonNull(participantId, "participantId");
        if (path.isBlank() || participantId.isBlank()) {
            throw new IllegalArgumentException("election path and participant id must not be empty, got '" + path
                    + "' and '" + participantId + "'");
        }
        this.tokenSource = tokenSource;
        this.events = Objects.requireNonNull(events, "events");
        this.autoStartup = autoStartup;
    }

    public String path() {
        return path;
    }

    public String participantId() {
        return participantId;
    }

    /** Whether this instance leads now, with a valid term. */
    public boolean isLeader() {
        return leadership().isPresent();
    }

    /** The current term while it is valid: read its token for a write made as leader. */
    public Optional<Leadership> leadership() {
        FencedLeaderElection current;
        synchronized (monitor) {
            current = election;
        }
        return current == null ? Optional.empty() : current.leadership();
    }

    /** Joins the election (the starter calls this when the context starts, unless auto-startup is off). */
    @Override
    public void start() {
        synchronized (monitor) {
            if (running) {
                return;
            }
            election = ZooKeeperLockService.election(
                    locks, path, participantId, tokenSource, "election participant " + participantId);
            running = true;
            join();
        }
    }

    /** Steps down (the next participant takes over at once) and waits for the ended event, at most a while. */
    @Override
    public void stop() {
        CompletableFuture<Void> last;
        synchronized (monitor) {
            if (!running) {
                return;
            }
            running = false;
            last = candidacy;
            election.close();
        }
        try {
            last.get(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            LOG.warn(
                    "participant {} of election {} stepped down; its term's end was not seen within {}: {}",
                    participantId,
                    path,
                    STOP_TIMEOUT,
                    e.toString());
        }
    }

    @Override
    public boolean isRunning() {
        synchronized (monitor) {
            return running;
        }
    }

    @Override
    public boolean isAutoStartup() {
        return autoStartup;
    }

    private void join() {
        Term term = new Term();
        CompletableFuture<Void> done = new CompletableFuture<>();
        candidacy = done;
        FencedLeaderElection current = election;
        current.lead(term::serve).whenComplete((cause, failure) -> {
            try {
                if (term.leadership != null) {
                    LeaseLoss why = cause != null ? cause : term.leadership.lossCause();
                    LOG.info(
                            "participant {} of election {}: term {} ended ({})",
                            participantId,
                            path,
                            term.leadership.token(),
                            why);
                    publishEnd(term.leadership, why);
                }
                if (failure != null) {
                    LOG.warn(
                            "participant {} of election {}: candidacy failed, joining again in {}: {}",
                            participantId,
                            path,
                            REJOIN_DELAY,
                            failure.toString());
                }
            } finally {
                done.complete(null);
                rejoin(current, failure != null);
            }
        });
    }

    /**
     * Publishes the term's end. A listener's exception is logged, not thrown: nothing waits on this thread's
     * result, so thrown it would be lost, and the participant must still join again.
     */
    private void publishEnd(Leadership ended, LeaseLoss why) {
        try {
            events.publishEvent(new TermEndedEvent(this, ended, why));
        } catch (RuntimeException e) {
            LOG.warn(
                    "participant {} of election {}: a listener of the end of term {} failed: {}",
                    participantId,
                    path,
                    ended.token(),
                    e.toString(),
                    e);
        }
    }

    private void rejoin(FencedLeaderElection ended, boolean afterFailure) {
        if (afterFailure) {
            CompletableFuture.delayedExecutor(REJOIN_DELAY.toMillis(), TimeUnit.MILLISECONDS)
                    .execute(() -> rejoin(ended, false));
            return;
        }
        synchronized (monitor) {
            if (running && election == ended) {
                join();
            }
        }
    }

    /** One candidacy's term, as the participant's thread serves it. */
    private final class Term {
        private volatile Leadership leadership;

        /**
         * Publishes the start, then waits for the term's end. The end interrupts this thread once; a listener
         * that swallowed that interrupt (or ran a locked method whose exit cleared it) must not keep the term
         * served forever, so the wait also looks at the term itself.
         */
        void serve(Leadership won) throws InterruptedException {
            leadership = won;
            events.publishEvent(new TermStartedEvent(FencedElectionParticipant.this, won));
            while (won.isValid()) {
                Thread.sleep(TERM_CHECK.toMillis());
            }
        }
    }

    @Override
    public String toString() {
        return "FencedElectionParticipant[" + path + ", " + participantId + "]";
    }
}
