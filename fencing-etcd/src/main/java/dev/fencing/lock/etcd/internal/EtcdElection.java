package dev.fencing.lock.etcd.internal;

import dev.fencing.lock.FencedLeaderElection;
import dev.fencing.lock.Leadership;
import dev.fencing.lock.LeadershipTask;
import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.LockInterruptedException;
import dev.fencing.lock.spi.HeldLeadership;
import dev.fencing.lock.spi.HeldLease;
import dev.fencing.lock.spi.Timeouts;
import io.etcd.jetcd.ByteSequence;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One participant of an election on etcd: each candidacy contends for the election's lock on a thread of its own
 * with keys that hold the participant id, leads while it holds it, and lets go (deleting its key) when the term
 * ends. The term's token is the key's create revision, as a lock grant's.
 */
final class EtcdElection implements FencedLeaderElection {
    private static final Logger LOG = LoggerFactory.getLogger(EtcdElection.class);

    private final EtcdLockRegistry registry;
    private final String name;
    private final String path;
    private final String participantId;
    private final ByteSequence value;
    private Candidacy candidacy;
    private boolean closed;
    /** How often {@link #stepDown()} was called: an await that sees it change stops instead of joining again. */
    private long stepDowns; // guarded by this

    private volatile Runnable beforeTerm = () -> {};
    private volatile Runnable beforeLeaving = () -> {};

    EtcdElection(EtcdLockRegistry registry, String name, String participantId) {
        this.registry = registry;
        this.name = name;
        this.path = registry.pathOf(name);
        this.participantId = participantId;
        this.value = ByteSequence.from(participantId, StandardCharsets.UTF_8);
    }

    /** One candidacy: from joining to the end of its term (or its withdrawal before it was elected). */
    private final class Candidacy implements Runnable {
        final CompletableFuture<Leadership> elected = new CompletableFuture<>();
        final CompletableFuture<LeaseLoss> over = new CompletableFuture<>();
        /** Completed once the candidacy's thread has let go of its key and is no longer the participant's. */
        final CompletableFuture<Boolean> left = new CompletableFuture<>();

        final LeadershipTask task;
        final Thread thread;
        volatile boolean withdrawn;
        /** Set before a grant is checked: from then on a loss of the hold interrupts the thread (ends the term). */
        volatile boolean leading;
        /** The grant being checked or led under while {@link #leading}. */
        volatile EtcdHold held;

        volatile HeldLeadership term;

        Candidacy(LeadershipTask task) {
            this.task = task;
            this.thread = new Thread(this, "fenced-election-" + path + "-" + participantId);
            thread.setDaemon(true);
        }

        @Override
        public void run() {
            try {
                over.complete(contendAndLead());
            } catch (Throwable failure) {
                elected.completeExceptionally(failure);
                over.completeExceptionally(failure);
            } finally {
                beforeLeaving.run();
                registry.forget(EtcdElection.this);
                synchronized (EtcdElection.this) {
                    if (candidacy == this) {
                        candidacy = null;
                    }
                }
                if (!elected.isDone()) {
                    elected.completeExceptionally(new IllegalStateException("participant " + participantId + " of "
                            + path + " stepped down or was closed before it was elected"));
                }
                left.complete(true);
            }
        }

        private LeaseLoss contendAndLead() throws Exception {
            while (!withdrawn) {
                EtcdHold hold;
                try {
                    hold = registry.acquire(name, null, value, this::holdLost).orElseThrow();
                } catch (LockInterruptedException e) {
                    if (withdrawn) {
                        Thread.interrupted();
                        return null;
                    }
                    throw e;
                } catch (IllegalStateException e) {
                    if (withdrawn) {
                        return null;
                    }
                    throw e;
                }
                // whatever ends the grant, an Error too, lets go of its key: else its keep-alives renew it for good
                boolean published = false;
                try {
                    HeldLeadership leadership = new HeldLeadership(new HeldLease(hold, true), participantId);
                    held = hold;
                    leading = true;
                    if (!leadership.isValid() || withdrawn) {
                        continue; // invalid at once: no term; let go and contend again (or leave)
                    }
                    beforeTerm.run();
                    synchronized (this) {
                        // withdraw() sets withdrawn and reads term under this monitor: either it finds the term and
                        // ends it, or the term is never published (a step-down that returned leaves no valid term)
                        published = !withdrawn;
                        if (published) {
                            term = leadership;
                        }
                    }
                    if (!published) {
                        continue;
                    }
                    LOG.info("{} leads {} with fence token {}", participantId, path, hold.token);
                    elected.complete(leadership);
                    try {
                        if (task != null) {
                            task.lead(leadership);
                        } else {
                            while (hold.loss() == null) {
                                Thread.sleep(Long.MAX_VALUE);
                            }
                        }
                    } catch (InterruptedException e) {
                        // the term ended, or the participant stepped down
                    }
                } finally {
                    if (published) {
                        registry.endTerm(hold, LeaseLoss.STEPPED_DOWN);
                    } else {
                        leading = false; // no term: the release ends no term
                    }
                    Thread.interrupted();
                    registry.exit(hold);
                }
                return hold.loss();
            }
            return null;
        }

        /**
         * A loss while contending gives the key up inside the registry's acquire; only a term is interrupted, and its
         * etcd lease revoked at once (the key goes with it), so the next participant need not wait for the task.
         */
        private void holdLost() {
            if (leading) {
                thread.interrupt();
                registry.keys.revokeAhead(held);
            }
        }

        void withdraw() {
            HeldLeadership current;
            synchronized (this) {
                withdrawn = true;
                current = term;
            }
            if (current != null) {
                registry.endTerm((EtcdHold) current.lease().hold(), LeaseLoss.STEPPED_DOWN);
            }
            thread.interrupt();
        }
    }

    @Override
    public String path() {
        return path;
    }

    @Override
    public String participantId() {
        return participantId;
    }

    private synchronized Candidacy join(LeadershipTask task) {
        if (closed) {
            throw new IllegalStateException("participant " + participantId + " of " + path + " is closed");
        }
        if (candidacy != null) {
            if (task != null) {
                throw new IllegalStateException(
                        "participant " + participantId + " of " + path + " is already a candidate");
            }
            return candidacy;
        }
        registry.track(this);
        Candidacy joined = new Candidacy(task);
        candidacy = joined;
        joined.thread.start();
        return joined;
    }

    @Override
    public Leadership awaitLeadership() {
        return awaitTerm(null).orElseThrow();
    }

    @Override
    public Optional<Leadership> awaitLeadership(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isZero() || timeout.isNegative()) {
            throw new IllegalArgumentException("timeout must be positive, got " + timeout);
        }
        return awaitTerm(Timeouts.capped(timeout));
    }

    /**
     * A term that is valid when handed out: the candidacy joined may be one whose term has just ended and whose
     * thread is still letting go of its key; that one is waited out, and a new candidacy joined, unless the term
     * ended because the participant stepped down since this call began.
     */
    private Optional<Leadership> awaitTerm(Duration timeout) {
        long deadline = timeout == null ? 0 : System.nanoTime() + timeout.toNanos();
        long stepDownsSeen;
        synchronized (this) {
            stepDownsSeen = stepDowns;
        }
        while (true) {
            Candidacy current = joinToAwait(stepDownsSeen);
            Optional<Leadership> term = await(current.elected, remaining(timeout, deadline));
            if (term.isEmpty() || term.get().isValid()) {
                return term;
            }
            if (await(current.left, remaining(timeout, deadline)).isEmpty()) {
                return Optional.empty();
            }
        }
    }

    /** The current candidacy, or a new one unless the participant stepped down since the caller began. */
    private synchronized Candidacy joinToAwait(long stepDownsSeen) {
        if (!closed && stepDowns != stepDownsSeen) {
            throw new IllegalStateException("participant " + participantId + " stepped down from " + path
                    + " while this call awaited leadership; call awaitLeadership() again to join again");
        }
        return join(null);
    }

    private static Duration remaining(Duration timeout, long deadline) {
        return timeout == null ? null : Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
    }

    private <T> Optional<T> await(CompletableFuture<T> future, Duration timeout) {
        try {
            return Optional.of(timeout == null ? future.get() : future.get(timeout.toNanos(), TimeUnit.NANOSECONDS));
        } catch (TimeoutException e) {
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new LockInterruptedException(path, e);
        } catch (CancellationException e) {
            throw new IllegalStateException("candidacy of " + participantId + " in " + path + " was cancelled", e);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException runtime) {
                throw runtime;
            }
            throw new IllegalStateException("candidacy of " + participantId + " in " + path + " failed", e.getCause());
        }
    }

    @Override
    public CompletableFuture<LeaseLoss> lead(LeadershipTask task) {
        Objects.requireNonNull(task, "task");
        return join(task).over;
    }

    @Override
    public boolean isLeader() {
        return leadership().isPresent();
    }

    @Override
    public Optional<Leadership> leadership() {
        Candidacy current;
        synchronized (this) {
            current = candidacy;
        }
        HeldLeadership term = current == null ? null : current.term;
        return term != null && term.isValid() ? Optional.of(term) : Optional.empty();
    }

    @Override
    public Optional<String> currentLeaderId() {
        return registry.firstContenderValue(name).map(bytes -> bytes.toString(StandardCharsets.UTF_8));
    }

    @Override
    public void stepDown() {
        Candidacy current;
        synchronized (this) {
            stepDowns++;
            current = candidacy;
        }
        if (current != null) {
            current.withdraw();
        }
    }

    /** Steps down for good: also when the registry closes. */
    @Override
    public void close() {
        synchronized (this) {
            closed = true;
        }
        stepDown();
    }

    /**
     * Test hook: runs on the participant's thread after a grant was found valid and the candidacy not withdrawn,
     * before the term is published.
     */
    void beforeTerm(Runnable hook) {
        this.beforeTerm = Objects.requireNonNull(hook);
    }

    /** Test hook: runs on the participant's thread when its candidacy ends, before it stops being the current one. */
    void beforeLeaving(Runnable hook) {
        this.beforeLeaving = Objects.requireNonNull(hook);
    }

    @Override
    public String toString() {
        return "FencedLeaderElection[etcd " + path + ", " + participantId + "]";
    }
}
