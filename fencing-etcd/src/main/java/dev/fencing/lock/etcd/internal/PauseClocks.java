package dev.fencing.lock.etcd.internal;

import java.time.Duration;
import java.util.function.BiConsumer;

/** Starts the pause detection a registry uses: the one place where the shared pause detector plugs in. */
final class PauseClocks {
    private PauseClocks() {}

    /**
     * Starts detecting pauses longer than {@code tolerance}; {@code onPause} must mark every hold before it
     * returns, and the tick moves only after it returned.
     */
    static PauseClock start(Duration tolerance, BiConsumer<Duration, Duration> onPause) {
        // The shared detector (fencing-lock's dev.fencing.lock.spi.PauseDetector) is not in this build yet:
        // until it is, no pause is detected here, and only the keep-alive deadline bounds a paused holder.
        return new PauseClock() {
            @Override
            public long lastTick() {
                return 0;
            }

            @Override
            public boolean pausedSince(long tick) {
                return false;
            }

            @Override
            public void close() {}
        };
    }
}
