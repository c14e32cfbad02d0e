package dev.fencing.lock.zookeeper.internal;

import dev.fencing.lock.spi.PauseDetector;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The pause tolerance of the locks made on one client, and how it follows the session timeout the client
 * negotiated: the default is a third of the session timeout, at least 200 ms; an explicit tolerance is kept
 * while it is below the session timeout. Thread-safe: a session timeout is adopted on any acquiring thread.
 */
final class PauseTolerance {
    private static final Logger LOG = LoggerFactory.getLogger(PauseTolerance.class);
    private static final long MIN_DEFAULT_TOLERANCE_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

    private final Long explicitToleranceNanos;

    /** The session timeout, in ms, last warned of as not above the explicit pause tolerance; 0 for none. */
    private volatile int shortSessionWarned;

    private volatile boolean keepToleranceAboveSession;

    /** {@code pauseTolerance} is the tolerance the user set, or null for the default. */
    PauseTolerance(Duration pauseTolerance) {
        this.explicitToleranceNanos = pauseTolerance == null ? null : pauseTolerance.toNanos();
    }

    /** The tolerance before any session timeout is known: the explicit one, or the default's minimum. */
    Duration initial() {
        return Duration.ofNanos(explicitToleranceNanos != null ? explicitToleranceNanos : MIN_DEFAULT_TOLERANCE_NANOS);
    }

    /**
     * Sets {@code detector}'s tolerance for a session of {@code negotiatedSessionTimeoutMillis}. The default: a
     * third of it, at least the minimum. An explicit tolerance is kept while it is below the session timeout. One
     * that is not (the builder checks only a session negotiated by then: the client was not connected yet, or a
     * server granted less than was asked for) would let a pause that expired the session go unseen, and a lease
     * read valid after it while another client holds the lock: the default for that session applies instead while
     * sessions are that short (fail closed), and a WARN names both values, once per session timeout. Set before a
     * grant is registered, so that a lease never reads valid under a tolerance its session does not allow.
     */
    void adoptSessionTimeout(int negotiatedSessionTimeoutMillis, PauseDetector detector) {
        if (negotiatedSessionTimeoutMillis <= 0) {
            return;
        }
        long sessionNanos = TimeUnit.MILLISECONDS.toNanos(negotiatedSessionTimeoutMillis);
        long defaultNanos = Math.max(MIN_DEFAULT_TOLERANCE_NANOS, sessionNanos / 3);
        if (explicitToleranceNanos == null) {
            detector.setTolerance(Duration.ofNanos(defaultNanos));
            return;
        }
        if (explicitToleranceNanos < sessionNanos || keepToleranceAboveSession) {
            detector.setTolerance(Duration.ofNanos(explicitToleranceNanos));
            return;
        }
        // never longer than the tolerance given, on a session so short that the default's minimum is longer
        long appliedNanos = Math.min(explicitToleranceNanos, defaultNanos);
        detector.setTolerance(Duration.ofNanos(appliedNanos));
        if (shortSessionWarned != negotiatedSessionTimeoutMillis) {
            shortSessionWarned = negotiatedSessionTimeoutMillis;
            LOG.warn(
                    "the pause tolerance of {} ms is not below the session timeout of {} ms the client negotiated:"
                            + " a pause that expired the session would go unseen, so a tolerance of {} ms, the default"
                            + " for that session, applies while sessions are that short; set a pauseTolerance below the"
                            + " session timeout",
                    TimeUnit.NANOSECONDS.toMillis(explicitToleranceNanos),
                    negotiatedSessionTimeoutMillis,
                    TimeUnit.NANOSECONDS.toMillis(appliedNanos));
        }
    }

    /**
     * Test hook: keeps an explicit tolerance that is not below the session timeout, for a test that holds the
     * detector where a frozen JVM would hold it while its leases must not read as paused.
     */
    void keepToleranceAboveSession() {
        this.keepToleranceAboveSession = true;
    }
}
