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
        AtomicReference<PauseDetector.Tick> tickSeenByOnPause = new AtomicReference<>();
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
            PauseDetector.Tick tickBefore = pauses.lastTick();
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
            PauseDetector.Tick tick = pauses.lastTick();
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
            PauseDetector.Tick last = pauses.lastTick();
            PauseDetector.Tick tick =
                    new PauseDetector.Tick(last.nanos() - TimeUnit.SECONDS.toNanos(1), last.wallMillis() - 1_000);
            assertThat(pauses.pausedSince(tick)).isFalse();

            pauses.setTolerance(Duration.ofMillis(500));

            assertThat(pauses.pausedSince(tick)).isTrue();
            assertThat(pauses.tolerance()).isEqualTo(Duration.ofMillis(500));
        }
    }

    /**
     * A tolerance longer than {@code long} nanoseconds can count (about 292 years) failed with an {@link
     * ArithmeticException} ("long overflow") that named neither the setting nor the value, at the start or later.
     */
    @Test
    void refusesAToleranceTooLongToCountNamingIt() {
        Duration forever = Duration.ofSeconds(Long.MAX_VALUE);
        assertThatThrownBy(() -> PauseDetector.builder().tolerance(forever))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("pause tolerance")
                .hasMessageContaining(forever.toString());
        try (PauseDetector pauses = PauseDetector.builder()
                .tolerance(Duration.ofSeconds(5))
                .onPause((pause, tolerance) -> {})
                .start()) {
            assertThatThrownBy(() -> pauses.setTolerance(forever))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(forever.toString());
            assertThat(pauses.tolerance()).isEqualTo(Duration.ofSeconds(5));
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
    void aSuspendThatOnlyTheWallClockCountedReadsAsAPauseInAChecksAndInTheDetectorsRound() throws Exception {
        // given clocks where the monotonic one stands still while the machine is suspended, as Linux's does
        AtomicLong nanos = new AtomicLong(1_000_000_000L);
        AtomicLong wallMillis = new AtomicLong(1_700_000_000_000L);
        CountDownLatch told = new CountDownLatch(1);
        AtomicReference<Duration> stopped = new AtomicReference<>();
        try (PauseDetector pauses = PauseDetector.builder()
                .tolerance(Duration.ofMillis(500))
                .clocks(
                        () -> nanos.addAndGet(1_000_000), // a millisecond per reading
                        () -> wallMillis.addAndGet(1))
                .onPause((pause, tolerance) -> {
                    stopped.set(pause);
                    told.countDown();
                })
                .start()) {
            PauseDetector.Tick tick = pauses.lastTick();
            assertThat(pauses.pausedSince(tick)).isFalse();

            // when the machine sleeps for 30 s: only the wall clock moves
            wallMillis.addAndGet(30_000);

            // then a check with a tick read before it reads paused, and the detector's next round tells of it
            assertThat(pauses.pausedSince(tick)).isTrue();
            assertThat(told.await(10, TimeUnit.SECONDS)).isTrue();
            assertThat(stopped.get()).isGreaterThanOrEqualTo(Duration.ofSeconds(29));
        }
    }

    @Test
    void aToleranceLoweredDuringARoundAppliesToThatRoundsVerdict() throws Exception {
        // given a detector with a 10 s tolerance on clocks the test moves, held in its next round
        AtomicLong nanos = new AtomicLong(1_000_000_000L);
        AtomicLong wallMillis = new AtomicLong(1_700_000_000_000L);
        CountDownLatch held = new CountDownLatch(1);
        CountDownLatch resume = new CountDownLatch(1);
        AtomicBoolean holdOnce = new AtomicBoolean(true);
        CountDownLatch told = new CountDownLatch(1);
        try (PauseDetector pauses = PauseDetector.builder()
                .tolerance(Duration.ofSeconds(10))
                .clocks(nanos::get, wallMillis::get)
                .eachRound(() -> {
                    if (holdOnce.compareAndSet(true, false)) {
                        held.countDown();
                        awaitQuietly(resume);
                    }
                })
                .onPause((pause, tolerance) -> told.countDown())
                .start()) {
            assertThat(held.await(10, TimeUnit.SECONDS)).isTrue();

            // when, during that round, the tolerance drops to 1 s and the JVM stops for 5 s
            pauses.setTolerance(Duration.ofSeconds(1));
            nanos.addAndGet(TimeUnit.SECONDS.toNanos(5));
            wallMillis.addAndGet(5_000);
            resume.countDown();

            // then the round tells of a pause: 5 s is over the tolerance the checks already use
            assertThat(told.await(10, TimeUnit.SECONDS)).isTrue();
        }
    }

    @Test
    void theTimeSinceATickIsTheGreaterAdvanceOfTheTwoClocksAndAWallClockSteppedBackCountsNothing() {
        PauseDetector.Tick from = new PauseDetector.Tick(0, 10_000);
        // monotonic 2 s, wall 2 s
        assertThat(PauseDetector.elapsedNanos(from, new PauseDetector.Tick(2_000_000_000L, 12_000)))
                .isEqualTo(2_000_000_000L);
        // suspended 30 s: the wall clock counted it
        assertThat(PauseDetector.elapsedNanos(from, new PauseDetector.Tick(2_000_000_000L, 42_000)))
                .isEqualTo(32_000_000_000L);
        // the wall clock stepped back an hour: the monotonic clock still measures
        assertThat(PauseDetector.elapsedNanos(from, new PauseDetector.Tick(2_000_000_000L, 10_000 - 3_600_000)))
                .isEqualTo(2_000_000_000L);
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
