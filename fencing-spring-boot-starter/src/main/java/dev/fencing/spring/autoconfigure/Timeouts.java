package dev.fencing.spring.autoconfigure;

import java.time.Duration;

/**
 * The checks of the starter's timeout properties. The clients take them as an {@code int} of milliseconds (Curator,
 * and jetcd's connect timeout) and a larger value would wrap around to a negative one, or overflow {@link
 * Duration#toMillis()}: it fails the start, naming the property, the value and the bound.
 */
final class Timeouts {
    /** {@link Integer#MAX_VALUE} milliseconds, about 24.8 days. */
    static final Duration MAX = Duration.ofMillis(Integer.MAX_VALUE);

    private Timeouts() {}

    /** A timeout where 0 means "do not wait". */
    static Duration zeroOrPositive(String property, Duration value) {
        if (value == null || value.isNegative() || value.compareTo(MAX) > 0) {
            throw new IllegalStateException(
                    property + " must be a duration >= 0 (0: start without waiting) and at most " + MAX.toMillis()
                            + " ms (about 24 days), got " + value);
        }
        return value;
    }

    /**
     * A timeout that must be positive, in milliseconds: at least 1 ms, since a shorter one (500us) would reach the
     * client as 0 ms.
     */
    static int positiveMillis(String property, Duration value) {
        if (value == null || value.compareTo(Duration.ofMillis(1)) < 0 || value.compareTo(MAX) > 0) {
            throw new IllegalStateException(property + " must be a positive duration, got " + value + " (at least 1 ms"
                    + " and at most " + MAX.toMillis() + " ms, about 24 days)");
        }
        return (int) value.toMillis();
    }
}
