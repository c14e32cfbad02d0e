package dev.fencing.lock.spi;

import java.time.Duration;

/** Waits given as a {@link Duration}, as backends count them. */
public final class Timeouts {
    /**
     * The longest wait a backend counts: about 146 years in nanoseconds, half of {@code long}'s range, so that
     * {@code System.nanoTime()} plus it, compared by difference, never passes a deadline that has not come.
     */
    public static final Duration LONGEST = Duration.ofNanos(Long.MAX_VALUE / 2);

    private Timeouts() {}

    /**
     * {@code timeout}, or {@link #LONGEST} if it is longer: a wait of centuries (a caller's "forever", such as
     * {@code Duration.ofSeconds(Long.MAX_VALUE)}) waits without end rather than failing with an overflow of its
     * nanoseconds.
     */
    public static Duration capped(Duration timeout) {
        return timeout.compareTo(LONGEST) > 0 ? LONGEST : timeout;
    }
}
