package dev.fencing.lock.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class PauseDetectorTest {

    @Test
    void aHeldDetectorReadsAsPausedAndTellsOfThePauseBeforeItMovesItsTick() throws Exception {
        CountDownLatch held = new CountDownLatch(1);
        CountDownLatch resume = new CountDownLatch(1);
        AtomicBoolean holdOnce = new AtomicBoolean(true);
        AtomicReference<Duration> stopped = new AtomicReference<>();
        AtomicLong tickSeenByOnPause = new AtomicLong();
        AtomicReference<PauseDetector> detector = new AtomicReference<>();
        CountDownLatch told = new CountDownLatch(1);
        detector.set(PauseDetector.builder()
                .tolerance(Duration.ofMillis(100))
                .eachRound(() -> {
                    if (holdOnce.compareAndSet(true, false)) {
                        held.countDown();
                        awaitQuietly(resume); // where a frozen JVM would hold the detector
                    }
                })
                .onPause((pause, tolerance) -> {
                    stopped.set(pause);
                    tickSeenByOnPause.set(detector.get().lastTick());
                    told.countDown();
                })
                .start());
        try (PauseDetector pauses = detector.get()) {
            assertThat(held.await(10, TimeUnit.SECONDS)).isTrue();
            long tickBefore = pauses.lastTick();
            await().atMost(Duration.ofSeconds(10)).until(pauses::pausedTooLong);
            assertThat(pauses.pausedSince(tickBefore)).isTrue();

            resume.countDown();

            assertThat(told.await(10, TimeUnit.SECONDS)).isTrue();
            assertThat(stopped.get()).isGreaterThan(Duration.ofMillis(100));
            assertThat(tickSeenByOnPause.get())
                    .as("the tick moves after onPause")
                    .isEqualTo(tickBefore);
            await().atMost(Duration.ofSeconds(10)).until(() -> pauses.lastTick() != tickBefore);
            await().atMost(Duration.ofSeconds(10)).until(() -> !pauses.pausedTooLong());
        }
    }

    @Test
    void aRunningDetectorDoesNotReadAsPausedAndTellsNothing() {
        AtomicBoolean told = new AtomicBoolean();
        try (PauseDetector pauses = PauseDetector.builder()
                .tolerance(Duration.ofSeconds(5))
                .onPause((pause, tolerance) -> told.set(true))
                .start()) {
            long tick = pauses.lastTick();
            await().atMost(Duration.ofSeconds(10)).until(() -> pauses.lastTick() != tick);
            assertThat(pauses.pausedTooLong()).isFalse();
            assertThat(told).isFalse();
        }
    }

    @Test
    void aToleranceSetLaterAppliesToTheNextCheck() {
        try (PauseDetector pauses = PauseDetector.builder()
                .tolerance(Duration.ofSeconds(5))
                .onPause((pause, tolerance) -> {})
                .start()) {
            long tick = pauses.lastTick() - TimeUnit.SECONDS.toNanos(1);
            assertThat(pauses.pausedSince(tick)).isFalse();

            pauses.setTolerance(Duration.ofMillis(500));

            assertThat(pauses.pausedSince(tick)).isTrue();
            assertThat(pauses.tolerance()).isEqualTo(Duration.ofMillis(500));
        }
    }

    @Test
    void aDetectorWhoseCallbackFailedStopsTickingSoEveryCheckReadsAsPaused() {
        AtomicBoolean failOnce = new AtomicBoolean(true);
        try (PauseDetector pauses = PauseDetector.builder()
                .tolerance(Duration.ofMillis(50))
                .eachRound(() -> {
                    if (failOnce.compareAndSet(true, false)) {
                        throw new IllegalStateException("a backend's round failed");
                    }
                })
                .onPause((pause, tolerance) -> {})
                .start()) {
            await().atMost(Duration.ofSeconds(10)).until(pauses::pausedTooLong);
        }
    }

    @Test
    void aRoundIsAQuarterOfTheToleranceBetweenFiveAndFiftyMilliseconds() {
        assertThat(PauseDetector.roundNanos(TimeUnit.MILLISECONDS.toNanos(10)))
                .isEqualTo(TimeUnit.MILLISECONDS.toNanos(5));
        assertThat(PauseDetector.roundNanos(TimeUnit.MILLISECONDS.toNanos(100)))
                .isEqualTo(TimeUnit.MILLISECONDS.toNanos(25));
        assertThat(PauseDetector.roundNanos(TimeUnit.SECONDS.toNanos(10))).isEqualTo(TimeUnit.MILLISECONDS.toNanos(50));
    }

    @Test
    void theBuilderRefusesBadValuesAndMissingOnes() {
        assertThatThrownBy(() -> PauseDetector.builder().tolerance(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("PT0S");
        assertThatThrownBy(() -> PauseDetector.builder().tolerance(Duration.ofMillis(-1)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> PauseDetector.builder().threadName(" ")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> PauseDetector.builder().onPause(null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> PauseDetector.builder().onPause((p, t) -> {}).start())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("tolerance");
        assertThatThrownBy(() ->
                        PauseDetector.builder().tolerance(Duration.ofSeconds(1)).start())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("onPause");
    }

    @Test
    void setToleranceRefusesANonPositiveValue() {
        try (PauseDetector pauses = PauseDetector.builder()
                .tolerance(Duration.ofSeconds(1))
                .onPause((pause, tolerance) -> {})
                .start()) {
            assertThatThrownBy(() -> pauses.setTolerance(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class);
            assertThat(pauses.tolerance()).isEqualTo(Duration.ofSeconds(1));
            pauses.close();
            pauses.close();
        }
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
