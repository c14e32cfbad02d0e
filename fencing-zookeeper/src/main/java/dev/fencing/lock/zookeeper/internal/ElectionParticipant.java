package dev.fencing.lock.zookeeper.internal;

import dev.fencing.lock.FencedLeaderElection;
import dev.fencing.lock.FencedLockException;
import dev.fencing.lock.Leadership;
import dev.fencing.lock.LeadershipTask;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.LockAcquisitionException;
import dev.fencing.lock.LockInterruptedException;
import dev.fencing.lock.spi.HeldLeadership;
import dev.fencing.lock.spi.HeldLease;
import dev.fencing.lock.spi.Timeouts;
import dev.fencing.lock.zookeeper.TokenSource;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.KeeperException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A participant: a {@link PathLock} of its own (so its nodes carry its id), and at most one candidacy
 * at a time, each on a thread of its own that creates, waits on and releases the node and runs the task.
 *
 * <p>How a term ends, whoever ends it: its hold is marked invalid first (by the registry for connection
 * events, pauses and close, by {@link #stepDown()} or the returning task with {@link
 * LeaseLoss#STEPPED_DOWN}); the hold's hook then, under the monitor, finds the candidacy that serves
 * that hold, forgets it, deletes its node in the background (guaranteed, so the next participant takes
 * over even if the task ignores the interrupt) and interrupts its thread. The candidacy publishes its
 * term under the same monitor, after checking that its hold is still unmarked: a mark either comes first
 * (the grant is no term, and the participant contends again) or finds the term published.
 */
final class ElectionParticipant implements FencedLeaderElection {
    private static final Logger LOG = LoggerFactory.getLogger(ElectionParticipant.class);

    private final LockRegistry registry;
    private final String path;
    private final TokenSource source;
    private final String participantId;
    private final PathLock lock;
    private final Object monitor = new Object();
    /** The candidacy that contends or leads; null when out of the election. Guarded by the monitor. */
    private Candidacy candidacy;
    /** The candidacy whose term is published, until its thread has released the node. */
    private volatile Candidacy serving;

    private boolean closed; // guarded by the monitor
    /** How often {@link #stepDown()} was called: an await that sees it change stops instead of joining again. */
    private long stepDowns; // guarded by the monitor

    ElectionParticipant(LockRegistry registry, String path, TokenSource source, String participantId) {
        this.registry = registry;
        this.path = path;
        this.source = Objects.requireNonNull(source, "tokenSource");
        this.participantId = LockNames.validParticipantId(path, participantId);
        this.lock = new PathLock(
                registry,
                path,
                source,
                LockKind.EXCLUSIVE,
                participantId.getBytes(StandardCharsets.UTF_8),
                this::termLost);
    }

    @Override
    public String path() {
        return path;
    }

    @Override
    public String participantId() {
        return participantId;
    }

    /** ZooKeeper's own, so not on {@link FencedLeaderElection}. */
    TokenSource tokenSource() {
        return source;
    }

    @Override
    public Leadership awaitLeadership() {
        return await(null).orElseThrow();
    }

    @Override
    public Optional<Leadership> awaitLeadership(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException(
                    "timeout for leadership of " + path + " must be positive, got " + timeout);
        }
        return await(Timeouts.capped(timeout));
    }

    private Optional<Leadership> await(Duration timeout) {
        long deadline = timeout == null ? 0 : System.nanoTime() + timeout.toNanos();
        long stepDownsSeen;
        synchronized (monitor) {
            stepDownsSeen = stepDowns;
        }
        while (true) {
            Candidacy current = joinOrCurrent(stepDownsSeen);
            HeldLeadership term;
            try {
                term = timeout == null
                        ? current.elected.get()
                        : current.elected.get(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
            } catch (TimeoutException e) {
                return Optional.empty();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new LockInterruptedException(
                        "interrupted while awaiting leadership of " + path + "; participant " + participantId
                                + " is still a candidate",
                        path,
                        0,
                        e);
            } catch (ExecutionException e) {
                throw failure(e.getCause());
            }
            if (term == null) {
                throw new IllegalStateException("participant " + participantId + " left election " + path
                        + " (stepDown or close) before it was elected");
            }
            if (term.isValid()) {
                return Optional.of(term);
            }
            // That term has ended already; its end forgot the candidacy, so the next round joins again.
        }
    }

    private RuntimeException failure(Throwable cause) {
        if (cause instanceof FencedLockException e) {
            return e;
        }
        return new LockAcquisitionException(
                "participant " + participantId + " of election " + path + " failed: " + cause, path, cause);
    }

    /** The current candidacy, or a new one unless the participant stepped down since the caller began. */
    private Candidacy joinOrCurrent(long stepDownsSeen) {
        synchronized (monitor) {
            ensureOpen();
            if (stepDowns != stepDownsSeen) {
                throw new IllegalStateException("participant " + participantId + " stepped down from election " + path
                        + " while this call awaited leadership; call awaitLeadership() again to join again");
            }
            if (candidacy == null) {
                start(null);
            }
            return candidacy;
        }
    }

    /** Starts a candidacy; the caller holds the monitor and has checked that there is none. */
    private void start(LeadershipTask task) {
        registry.track(this);
        candidacy = new Candidacy(task);
        candidacy.thread.start();
    }

    @Override
    public CompletableFuture<LeaseLoss> lead(LeadershipTask task) {
        Objects.requireNonNull(task, "task");
        synchronized (monitor) {
            ensureOpen();
            if (candidacy != null) {
                throw new IllegalStateException("participant " + participantId + " is already a candidate in election "
                        + path + "; wait for that candidacy to end, or call stepDown() first");
            }
            start(task);
            return candidacy.ended.copy();
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException(
                    "participant " + participantId + " of election " + path + " is closed; it cannot join again");
        }
    }

    @Override
    public boolean isLeader() {
        Candidacy current = serving;
        return current != null && current.term.isValid();
    }

    @Override
    public Optional<Leadership> leadership() {
        Candidacy current = serving;
        return current != null && current.term.isValid() ? Optional.of(current.term) : Optional.empty();
    }

    @Override
    public Optional<String> currentLeaderId() {
        try {
            List<String> nodes = registry.client.getChildren().forPath(path).stream()
                    .filter(child -> child.contains(LockKind.EXCLUSIVE.nodeName))
                    .sorted(Comparator.comparing(LockKind.EXCLUSIVE::sortKey))
                    .toList();
            for (String node : nodes) {
                try {
                    byte[] data = registry.client.getData().forPath(ZKPaths.makePath(path, node));
                    return Optional.of(new String(data == null ? new byte[0] : data, StandardCharsets.UTF_8));
                } catch (KeeperException.NoNodeException gone) {
                    // that participant left meanwhile: the next one leads
                }
            }
            return Optional.empty();
        } catch (KeeperException.NoNodeException noParent) {
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new LockInterruptedException("interrupted while reading the leader of " + path, path, 0, e);
        } catch (Exception e) {
            throw new LockAcquisitionException("could not read the leader of election " + path + ": " + e, path, e);
        }
    }

    @Override
    public void stepDown() {
        Candidacy current;
        HeldLeadership term;
        synchronized (monitor) {
            stepDowns++;
            current = candidacy;
            if (current == null) {
                return;
            }
            current.withdrawn = true;
            candidacy = null;
            term = serving == current ? current.term : null;
        }
        if (term != null) {
            holdOf(term).stepDown(); // the hook deletes the node and interrupts the task
        } else {
            current.thread.interrupt(); // not elected: stop contending (Curator deletes the waiting node)
        }
    }

    @Override
    public void close() {
        synchronized (monitor) {
            closed = true;
        }
        stepDown();
        registry.forget(this);
    }

    /** The registry is closing: its holds are already marked {@link LeaseLoss#LOCKS_CLOSED}. */
    void withdrawOnClose() {
        close();
    }

    /** The hook of every hold of this participant's lock: runs right after the hold was marked invalid. */
    private void termLost(Hold hold) {
        Candidacy ended;
        synchronized (monitor) {
            ended = serving;
            if (ended == null || ended.term.lease().hold() != hold) {
                return; // a grant that is no term yet: its candidacy sees the mark before publishing
            }
            if (candidacy == ended) {
                candidacy = null;
            }
        }
        LOG.info(
                "participant {} no longer leads election {} (term token {}): {}",
                participantId,
                path,
                hold.token,
                hold.loss());
        try {
            registry.client.delete().guaranteed().inBackground().forPath(hold.nodePath);
        } catch (Exception e) {
            LOG.debug("could not delete {} (its session removes it): {}", hold.nodePath, e.toString());
        }
        ended.thread.interrupt();
    }

    /** One candidacy: contends until elected or withdrawn, then serves one term. */
    private final class Candidacy {
        final LeadershipTask task;
        final Thread thread;
        /** The term, or null if the candidacy ended before it was elected. */
        final CompletableFuture<HeldLeadership> elected = new CompletableFuture<>();

        final CompletableFuture<LeaseLoss> ended = new CompletableFuture<>();
        volatile boolean withdrawn;
        HeldLeadership term;

        Candidacy(LeadershipTask task) {
            this.task = task;
            this.thread = new Thread(this::run, "fenced-election-" + path + "-" + participantId);
            this.thread.setDaemon(true);
        }

        private void run() {
            LeaseLoss endedBy = null;
            Throwable failure = null;
            try {
                HeldLeadership won = contend();
                if (won != null) {
                    endedBy = serve(won);
                }
            } catch (Throwable e) {
                // a checked exception too, which a task may throw undeclared (Kotlin, a sneaky throw): uncaught,
                // the finally below would report the candidacy as ended without a term
                failure = e;
                LOG.warn("participant {} of election {} stopped: {}", participantId, path, e.toString());
            } finally {
                synchronized (monitor) {
                    if (candidacy == this) {
                        candidacy = null;
                    }
                    if (serving == this) {
                        serving = null;
                    }
                    if (candidacy == null) {
                        registry.forget(ElectionParticipant.this);
                    }
                }
                if (failure != null) {
                    elected.completeExceptionally(failure);
                    ended.completeExceptionally(failure);
                } else {
                    elected.complete(null);
                    ended.complete(endedBy);
                }
            }
        }

        /** The term once elected; null if withdrawn first. */
        private HeldLeadership contend() {
            while (true) {
                if (withdrawn) {
                    return null;
                }
                HeldLease lease;
                try {
                    lease = (HeldLease) lock.acquire(null).orElseThrow();
                } catch (RuntimeException e) {
                    if (withdrawn) {
                        // the step-down's interrupt, however Curator wrapped it: not a failure
                        Thread.interrupted();
                        return null;
                    }
                    throw e;
                }
                HeldLeadership won = new HeldLeadership(lease, participantId);
                try {
                    // may invalidate (a pause) and tell the listener: not under the monitor
                    boolean valid = won.isValid();
                    synchronized (monitor) {
                        if (valid && !withdrawn && lease.hold().loss() == null) {
                            term = won;
                            serving = this;
                            elected.complete(won);
                            LOG.info(
                                    "participant {} leads election {} with term token {}",
                                    participantId,
                                    path,
                                    won.token());
                            return won;
                        }
                    }
                } catch (Throwable e) {
                    // an Error too: the candidacy ends with it, and no lease would be left to release the node
                    holdOf(won).stepDown();
                    Thread.interrupted();
                    lease.close();
                    throw e;
                }
                LeaseLoss loss = lease.lossCause();
                lease.close();
                if (withdrawn || loss == LeaseLoss.LOCKS_CLOSED) {
                    return null;
                }
                LOG.info(
                        "participant {} of election {} was granted token {} but the grant came out invalid ({});"
                                + " contending again",
                        participantId,
                        path,
                        won.token(),
                        loss);
            }
        }

        /** Leads until the term ends; returns why it ended. */
        private LeaseLoss serve(HeldLeadership won) {
            try {
                if (task != null) {
                    task.lead(won);
                } else {
                    while (won.isValid()) {
                        Thread.sleep(100); // the hook's interrupt cuts this short
                    }
                }
            } catch (InterruptedException e) {
                // the term ended: how a task usually stops
            } finally {
                holdOf(won).stepDown(); // ends the term if the task returned while it was valid
                Thread.interrupted(); // the hook's interrupt has done its work; the release must not see it
                won.lease().close();
            }
            return won.lossCause();
        }
    }

    /** The hold behind a term: every lease of this participant's lock is made on a {@link Hold}. */
    private static Hold holdOf(HeldLeadership term) {
        return (Hold) term.lease().hold();
    }
}
