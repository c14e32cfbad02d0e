package dev.fencing.lock.spi;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Notices that this JVM stopped (a stop-the-world collection, a page fault, a SIGSTOP) for longer than a
 * tolerance, so that a lock backend can make its leases read invalid before the lock service tells it
 * that its session or lease ended. For lock backends, not for applications.
 *
 * <p>A daemon thread wakes in short rounds (a quarter of the tolerance, between 5 and 50 ms) and moves
 * its tick to the clocks. When a round finds that more than the tolerance passed since the last tick, it
 * calls the {@code onPause} callback and only after that returns moves the tick. The contract for a
 * backend:
 *
 * <ul>
 *   <li>{@code onPause} marks every lease it holds invalid before it returns (it may tell listeners
 *       later, on another thread). It is called on every detected pause, with or without leases.
 *   <li>A validity check reads {@link #lastTick()} <em>first</em>, then the lease's mark, then asks
 *       {@link #pausedSince(Tick)} with the tick it read. Read the other way round (mark, then tick), a
 *       check could see the old mark and the new tick and answer valid after a detected pause.
 *   <li>A lease granted across a pause is invalid too: a backend checks {@link #pausedTooLong()} after
 *       it registered a new lease where {@code onPause} will find it.
 * </ul>
 *
 * <p><b>Two clocks.</b> A tick holds {@link System#nanoTime()} and {@link System#currentTimeMillis()}, read
 * together, and time since a tick is the greater of the two clocks' advances. {@code nanoTime} is Linux's
 * {@code CLOCK_MONOTONIC}, which stands still while the machine is suspended (a laptop's sleep), so after such a
 * suspend it alone would show no gap while the lock service's session or lease had long expired; the wall clock
 * counts that time. What neither clock sees is not detected here: a virtual machine paused by its hypervisor
 * usually finds both clocks where they were (until a later step of its wall clock, which then reads as a pause),
 * and a wall clock stepped back just before a suspend hides up to the step; then only the lock service's own
 * report, and the resource's token check, end the lease. The wall clock can be stepped: a step back counts
 * nothing (the monotonic clock still measures), a step forward by about the tolerance or more reads as a pause
 * (fail closed: leases read invalid, and the application acquires again).
 *
 * <p>Thread-safe. If a callback throws, the detector logs it and stops: its tick no longer moves, so
 * from then on every check reads as paused (fail closed).
 *
 * <pre>{@code
 * PauseDetector pauses = PauseDetector.builder()
 *         .threadName("my-lock-pause-detector")
 *         .tolerance(Duration.ofSeconds(1))
 *         .onPause((stopped, tolerance) -> leases.forEach(lease -> lease.markInvalid()))
 *         .start();
 * // in a validity check:
 * PauseDetector.Tick tick = pauses.lastTick();
 * boolean valid = !lease.markedInvalid() && !pauses.pausedSince(tick);
 * }</pre>
 */
public final class PauseDetector implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(PauseDetector.class);
    private static final long MIN_ROUND_NANOS = TimeUnit.MILLISECONDS.toNanos(5);
    private static final long MAX_ROUND_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

    /** Told of a pause longer than the tolerance, on the detector's thread, before the tick moves. */
    @FunctionalInterface
    public interface PauseListener {
        /**
         * @param stopped how long the detector did not run: at least as long as this JVM was stopped
         * @param tolerance the tolerance the pause exceeded
         */
        void paused(Duration stopped, Duration tolerance);
    }

    /**
     * Both clocks as one round read them: {@link System#nanoTime()} and {@link System#currentTimeMillis()}.
     * One object, so that a check that reads a tick gets both clocks of the same round.
     */
    public record Tick(long nanos, long wallMillis) {}

    private final Thread thread;
    private final Runnable eachRound;
    private final PauseListener onPause;
    private final LongSupplier nanoClock;
    private final LongSupplier wallClock;
    private volatile long toleranceNanos;
    private volatile Tick lastTick;
    private volatile boolean closed;

    private PauseDetector(Builder builder) {
        this.toleranceNanos = builder.tolerance.toNanos();
        this.eachRound = builder.eachRound;
        this.onPause = builder.onPause;
        this.nanoClock = builder.nanoClock;
        this.wallClock = builder.wallClock;
        this.lastTick = readClocks();
        this.thread = new Thread(this::detectPauses, builder.threadName);
        thread.setDaemon(true);
    }

    public static Builder builder() {
        return new Builder();
    }

    /** The detector's last tick, for a validity check to read <em>before</em> it reads a lease's mark: see the class comment. */
    public Tick lastTick() {
        return lastTick;
    }

    /**
     * True when more than the tolerance has passed since {@code tick}, by either clock. The clocks are read
     * here, after the caller read {@code tick}: clocks read first could come out older than a tick the detector
     * wrote after its mark, and a pause would read as none.
     */
    public boolean pausedSince(Tick tick) {
        return elapsedNanos(tick, readClocks()) > toleranceNanos;
    }

    /** True when this JVM has not run the pause detector for longer than the tolerance: it was frozen. */
    public boolean pausedTooLong() {
        return pausedSince(lastTick);
    }

    /** The pause tolerance now. */
    public Duration tolerance() {
        return Duration.ofNanos(toleranceNanos);
    }

    /**
     * Changes the tolerance, for a backend that learns its default only later (from a session timeout
     * the server negotiated, a lease's time to live). Rounds and checks that begin after this use it.
     *
     * @throws IllegalArgumentException if {@code tolerance} is null, zero, negative or longer than {@link
     *     Timeouts#LONGEST}
     */
    public void setTolerance(Duration tolerance) {
        this.toleranceNanos = requirePositive(tolerance).toNanos();
    }

    /** Stops the detector's thread; safe to call twice. Checks made after this still read the clock. */
    @Override
    public void close() {
        closed = true;
        thread.interrupt();
    }

    /** How long a round sleeps: a quarter of the tolerance, at least 5 and at most 50 ms. */
    static long roundNanos(long toleranceNanos) {
        return Math.max(MIN_ROUND_NANOS, Math.min(toleranceNanos / 4, MAX_ROUND_NANOS));
    }

    private Tick readClocks() {
        return new Tick(nanoClock.getAsLong(), wallClock.getAsLong());
    }

    /**
     * The time from {@code from} to {@code to}: the greater of the monotonic clock's advance and the wall clock's
     * (which may overcount by its millisecond of granularity: toward a pause, fail closed; a wall clock stepped
     * back counts nothing).
     */
    static long elapsedNanos(Tick from, Tick to) {
        long monotonic = to.nanos() - from.nanos();
        long wall = to.wallMillis() - from.wallMillis();
        return wall > 0 ? Math.max(monotonic, TimeUnit.MILLISECONDS.toNanos(wall)) : monotonic;
    }

    private void detectPauses() {
        try {
            while (!closed) {
                LockSupport.parkNanos(roundNanos(toleranceNanos));
                eachRound.run();
                Tick now = readClocks();
                // the tolerance as it is now: one lowered during this round (a session that came back shorter)
                // already applies to the checks, so it must apply to this round's verdict too
                long tolerance = toleranceNanos;
                long stopped = elapsedNanos(lastTick, now);
                // Tell (and so invalidate) before moving the tick forward, so no holder sees a fresh tick
                // with a stale lease.
                if (stopped > tolerance) {
                    onPause.paused(Duration.ofNanos(stopped), Duration.ofNanos(tolerance));
                }
                lastTick = now;
            }
        } catch (RuntimeException | Error e) {
            LOG.error(
                    "pause detector {} stopped: its tick no longer moves, so every lease check reads as paused",
                    thread.getName(),
                    e);
        }
    }

    /** A positive tolerance that nanoseconds can count: at most {@link Timeouts#LONGEST}. */
    private static Duration requirePositive(Duration tolerance) {
        if (tolerance == null || tolerance.isZero() || tolerance.isNegative()) {
            throw new IllegalArgumentException("pause tolerance must be positive, got " + tolerance);
        }
        if (tolerance.compareTo(Timeouts.LONGEST) > 0) {
            throw new IllegalArgumentException(
                    "pause tolerance must be at most " + Timeouts.LONGEST + " (about 146 years), got " + tolerance);
        }
        return tolerance;
    }

    /** Builds and starts a {@link PauseDetector}; {@code tolerance} and {@code onPause} are required. */
    public static final class Builder {
        private String threadName = "fenced-lock-pause-detector";
        private Duration tolerance;
        private PauseListener onPause;
        private Runnable eachRound = () -> {};
        private LongSupplier nanoClock = System::nanoTime;
        private LongSupplier wallClock = System::currentTimeMillis;

        private Builder() {}

        /** For tests: the two clocks, in place of {@link System#nanoTime()} and {@link System#currentTimeMillis()}. */
        Builder clocks(LongSupplier nanoClock, LongSupplier wallClock) {
            this.nanoClock = Objects.requireNonNull(nanoClock, "nanoClock");
            this.wallClock = Objects.requireNonNull(wallClock, "wallClock");
            return this;
        }

        /** The detector thread's name; {@code fenced-lock-pause-detector} by default. */
        public Builder threadName(String threadName) {
            if (threadName == null || threadName.isBlank()) {
                throw new IllegalArgumentException(
                        "pause detector thread name must not be blank, got '" + threadName + "'");
            }
            this.threadName = threadName;
            return this;
        }

        /**
         * How long this JVM may stop before its leases read invalid. Leave it well below the lock
         * service's session or lease timeout; it may be changed later with {@link PauseDetector#setTolerance}.
         *
         * @throws IllegalArgumentException if {@code tolerance} is null, zero, negative or longer than {@link
         *     Timeouts#LONGEST}
         */
        public Builder tolerance(Duration tolerance) {
            this.tolerance = requirePositive(tolerance);
            return this;
        }

        /** Marks every lease invalid on a pause: see the class comment. */
        public Builder onPause(PauseListener onPause) {
            this.onPause = Objects.requireNonNull(onPause, "onPause");
            return this;
        }

        /**
         * Runs on the detector's thread in each round, before the round reads the clock: for a backend's
         * own periodic checks, and for tests that hold the detector where a frozen JVM would hold it.
         */
        public Builder eachRound(Runnable eachRound) {
            this.eachRound = Objects.requireNonNull(eachRound, "eachRound");
            return this;
        }

        /** Starts the detector's thread. */
        public PauseDetector start() {
            if (tolerance == null) {
                throw new IllegalStateException("a pause detector needs a tolerance");
            }
            if (onPause == null) {
                throw new IllegalStateException("a pause detector needs an onPause callback");
            }
            PauseDetector detector = new PauseDetector(this);
            detector.thread.start();
            return detector;
        }
    }
}
