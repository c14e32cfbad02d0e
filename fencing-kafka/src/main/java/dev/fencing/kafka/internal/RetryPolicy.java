package dev.fencing.kafka.internal;

import dev.fencing.kafka.RecordHandlingException;
import dev.fencing.kafka.WatermarkStoreException;
import java.time.Duration;
import java.util.function.Predicate;
import org.apache.kafka.common.errors.RetriableException;

/**
 * Which failures the consumer rides out, and how long it waits between attempts: a failure of the store's
 * database that {@link TransientFailures} calls transient, or a Kafka request of the store's checks that Kafka
 * calls retriable ({@link TopicIds}) (also inside a transactional handler, whose statements
 * run in the store's transaction and are rolled back with it), or a handler failure the application named;
 * every attempt waits {@code initialBackoff} doubled per attempt up to {@code maxBackoff}, and a run of failures
 * longer than {@code maxTime} is final. Immutable and thread-safe; {@link Attempts} is for one thread.
 */
public final class RetryPolicy {
    /** The longest time a long of nanoseconds holds. */
    private static final Duration LONGEST = Duration.ofNanos(Long.MAX_VALUE);

    private final Duration initialBackoff;
    private final Duration maxBackoff;
    private final Duration maxTime;
    private final boolean transactional;
    private final Predicate<? super Throwable> handlerFailures;

    /**
     * @param maxTime 0: nothing is retried
     * @param handlerFailures which of a handler's own failures (the cause of its {@link RecordHandlingException})
     *     are retried; never an {@code Error}
     */
    public RetryPolicy(
            Duration initialBackoff,
            Duration maxBackoff,
            Duration maxTime,
            boolean transactional,
            Predicate<? super Throwable> handlerFailures) {
        this.initialBackoff = initialBackoff;
        this.maxBackoff = maxBackoff.compareTo(initialBackoff) < 0 ? initialBackoff : maxBackoff;
        this.maxTime = maxTime;
        this.transactional = transactional;
        this.handlerFailures = handlerFailures;
    }

    /** Whether {@code failure} may be retried (if time is left). */
    public boolean retries(Throwable failure) {
        if (maxTime.isZero()) {
            return false;
        }
        if (failure instanceof RecordHandlingException handling) {
            Throwable cause = handling.getCause();
            if (cause == null || cause instanceof Error) {
                return false;
            }
            // a transactional handler's statements are the store's transaction: its loss is the store's
            return (transactional && TransientFailures.isTransient(cause)) || handlerFailures.test(cause);
        }
        // a Kafka request the store's checks need (the topic ids) that Kafka says to retry is as transient
        return failure instanceof WatermarkStoreException
                && (TransientFailures.isTransient(failure) || failure.getCause() instanceof RetriableException);
    }

    /** The wait before attempt {@code n} (1: the first retry): the initial back-off, doubled each time, capped. */
    public Duration backoff(int n) {
        Duration wait = initialBackoff;
        for (int i = 1; i < n && wait.compareTo(maxBackoff) < 0; i++) {
            wait = wait.multipliedBy(2);
        }
        return wait.compareTo(maxBackoff) < 0 ? wait : maxBackoff;
    }

    /**
     * {@code d} in nanoseconds, or Long.MAX_VALUE (292 years) for a longer one: a setting of Long.MAX_VALUE
     * milliseconds (as long as it takes) is waited out, not an overflow at the first failure.
     */
    private static long nanos(Duration d) {
        return d.compareTo(LONGEST) < 0 ? d.toNanos() : Long.MAX_VALUE;
    }

    /** A run of failures of one unit, record or group (or of the poll thread), from its first failure on. */
    public Attempts attempts() {
        return new Attempts();
    }

    /** One run of failed attempts. Not thread-safe. */
    public final class Attempts {
        private long firstFailure;
        private int failures;

        /**
         * After a failed attempt: the wait before the next one in nanoseconds, or -1 if {@code failure} is not
         * retried or the run has lasted {@code maxTime}.
         */
        public long next(Throwable failure) {
            if (!retries(failure)) {
                return -1;
            }
            long now = System.nanoTime();
            if (failures++ == 0) {
                firstFailure = now;
            }
            long wait = nanos(backoff(failures));
            long left = nanos(maxTime) - (now - firstFailure);
            if (left <= 0) {
                return -1;
            }
            return Math.min(wait, left);
        }

        /** Failed attempts so far. */
        public int failures() {
            return failures;
        }

        /** A success: the next failure starts a new run. */
        public void reset() {
            failures = 0;
        }
    }
}
