package dev.fencing.verify.client;

import dev.fencing.lock.Lease;
import java.util.Random;

/**
 * What a writer does under each lock grant: the resource's half of {@link WriterMain}'s loop, which takes the
 * locks, numbers the operations, and releases each lease after {@link #operate}. A new resource is one of these
 * (and the coordinator's {@code Workload}, and a checker).
 *
 * @param <P> one operation's choices, drawn before its lock is taken
 */
interface WriterWorkload<P> extends AutoCloseable {

    /** Connects before the writer reports READY, so that the first operation is not slow. */
    void connect();

    /** Draws one operation's choices from the writer's seeded random, before its lock is taken. */
    P plan(Random random);

    /** Which of the resource's locks the operation takes: its exclusive lock, unless the workload says otherwise. */
    default LockKind lockKind(P plan) {
        return LockKind.EXCLUSIVE;
    }

    /** A resource's locks: its exclusive lock, or the read or write lock of its read/write lock. */
    enum LockKind {
        EXCLUSIVE,
        READ,
        WRITE
    }

    /**
     * Runs operation {@code op} on {@code resource} under {@code lease} and records it in the history: its {@code
     * LOCKED} event, the {@link PausePoint}s it passes, invoke and completion, the matching events. Returns once
     * everything it sends under the token is sent; never checks the lease; does not release it.
     */
    void operate(Lease lease, String resource, long op, P plan);

    @Override
    void close();
}
