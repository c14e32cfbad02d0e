package dev.fencing.harness;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class PointGateTest {
    enum Point {
        READ_WRITE,
        WRITE_PUBLISH
    }

    private final PointGate<Point> gate = new PointGate<>(Point.class, Duration.ofSeconds(30));

    @Test
    void anUnarmedPointIsPassedWithoutAReport() {
        assertThat(gate.pass(Point.READ_WRITE, () -> {
                    throw new AssertionError("reported");
                }))
                .isFalse();
    }

    @Test
    void anArmedPointReportsOnceAndWaitsForGo() throws Exception {
        // given
        assertThat(gate.command("ARM WRITE_PUBLISH")).isTrue();
        assertThat(gate.pass(Point.READ_WRITE, () -> {})).isFalse(); // another point: not this one
        CountDownLatch reported = new CountDownLatch(1);

        // when
        CompletableFuture<Boolean> passed =
                CompletableFuture.supplyAsync(() -> gate.pass(Point.WRITE_PUBLISH, reported::countDown));

        // then: it waits at the point until GO
        assertThat(reported.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(passed).isNotDone();
        assertThat(gate.command("GO")).isTrue();
        assertThat(passed.get(10, TimeUnit.SECONDS)).isTrue();
        assertThat(gate.pass(Point.WRITE_PUBLISH, () -> {})).isFalse(); // disarmed by passing
    }

    @Test
    void aDisarmedPointIsPassedAndOtherCommandsAreTheChildsOwn() {
        gate.command("ARM READ_WRITE");
        assertThat(gate.command("DISARM")).isTrue();

        assertThat(gate.pass(Point.READ_WRITE, () -> {})).isFalse();
        assertThat(gate.command("START")).isFalse();
        assertThatThrownBy(() -> gate.command("ARM NOWHERE")).isInstanceOf(IllegalArgumentException.class);
    }
}
