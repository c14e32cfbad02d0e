package dev.fencing.lock.etcd.internal;

import dev.fencing.lock.spi.PauseDetector;

/**
 * The one place where pause detection plugs into a validity check: the detector marks every hold, then moves
 * its tick; a check reads {@link #lastTick()} first, then the hold's mark, then asks {@link #pausedSince(PauseDetector.Tick)}
 * (which reads the clock), the order {@code fencing-zookeeper}'s registry uses and explains.
 */
interface PauseClock extends AutoCloseable {

    /** The detector's last tick, read before the hold's mark. */
    PauseDetector.Tick lastTick();

    /** Whether more than the tolerance has passed since {@code tick}; reads the clock itself, after the caller read the tick. */
    boolean pausedSince(PauseDetector.Tick tick);

    @Override
    void close();
}
