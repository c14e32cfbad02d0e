package dev.fencing.redis.internal;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A connection's command timeout, read as Lettuce reads it: zero is no timeout (Lettuce's own blocking commands
 * then wait for the reply, and it never expires a command), not a deadline already passed.
 */
public final class CommandTimeout {
    private CommandTimeout() {}

    /** Whether {@code timeout} is Lettuce's "no timeout". */
    public static boolean isNone(Duration timeout) {
        return timeout.isZero() || timeout.isNegative();
    }

    /**
     * Waits for {@code reply} up to {@code timeout}, or without a deadline when it is {@link #isNone none}. A
     * timeout beyond what nanoseconds hold in a {@code long} (about 292 years) waits that long.
     */
    static <T> T await(CompletableFuture<T> reply, Duration timeout)
            throws InterruptedException, ExecutionException, TimeoutException {
        if (isNone(timeout)) {
            return reply.get();
        }
        long nanos = timeout.compareTo(Duration.ofNanos(Long.MAX_VALUE)) >= 0 ? Long.MAX_VALUE : timeout.toNanos();
        return reply.get(nanos, TimeUnit.NANOSECONDS);
    }
}
