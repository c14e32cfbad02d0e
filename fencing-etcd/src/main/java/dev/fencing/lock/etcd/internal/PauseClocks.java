package dev.fencing.lock.etcd.internal;

import dev.fencing.lock.spi.PauseDetector;
import java.time.Duration;

/** Starts the pause detection a registry uses: the shared {@link PauseDetector}, behind {@link PauseClock}. */
final class PauseClocks {
    private PauseClocks() {}

    /**
     * Starts detecting pauses longer than {@code tolerance}; {@code onPause} marks every hold before it returns,
     * and the detector moves its tick only after that. {@code eachRound} is the detector's test hook.
     */
    static PauseClock start(Duration tolerance, PauseDetector.PauseListener onPause, Runnable eachRound) {
        PauseDetector detector = PauseDetector.builder()
                .threadName("fenced-etcd-pause-detector")
                .tolerance(tolerance)
                .onPause(onPause)
                .eachRound(eachRound)
                .start();
        return new PauseClock() {
            @Override
            public PauseDetector.Tick lastTick() {
                return detector.lastTick();
            }

            @Override
            public boolean pausedSince(PauseDetector.Tick tick) {
                return detector.pausedSince(tick);
            }

            @Override
            public void close() {
                detector.close();
            }
        };
    }
}
