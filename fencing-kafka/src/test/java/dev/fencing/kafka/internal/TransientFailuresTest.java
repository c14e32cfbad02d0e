package dev.fencing.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.kafka.RecordHandlingException;
import dev.fencing.kafka.WatermarkStoreException;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.time.Duration;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

class TransientFailuresTest {
    private static final TopicPartition PARTITION = new TopicPartition("t", 0);

    private static WatermarkStoreException store(String state) {
        return new WatermarkStoreException("store failed", new RuntimeException(new SQLException("x", state)));
    }

    private static RecordHandlingException handler(Throwable cause) {
        return new RecordHandlingException(PARTITION, 5, 7, cause);
    }

    private static RetryPolicy policy(boolean transactional) {
        return new RetryPolicy(
                Duration.ofMillis(100),
                Duration.ofSeconds(1),
                Duration.ofSeconds(60),
                transactional,
                e -> e instanceof IllegalArgumentException);
    }

    @Test
    void connectionLossShutdownsDeadlocksAndSerializationFailuresAreTransient() {
        for (String state :
                new String[] {"08001", "08003", "08006", "57P01", "57P02", "57P03", "40001", "40P01", "53300"}) {
            assertThat(TransientFailures.isTransient(store(state))).as(state).isTrue();
        }
        assertThat(TransientFailures.isTransient(new SQLTransientConnectionException("pool timed out")))
                .isTrue();
    }

    /** HikariCP's timeout carries the state of the last failure: a wrong password does not pass by waiting. */
    @Test
    void aPoolTimeoutOverWrongCredentialsOrAMissingDatabaseIsNot() {
        SQLException refused = new SQLException("password authentication failed", "28P01");
        assertThat(TransientFailures.isTransient(new SQLTransientConnectionException("timed out", "28P01", refused)))
                .isFalse();
        assertThat(TransientFailures.isTransient(new SQLTransientConnectionException("timed out", "3D000")))
                .isFalse();
        assertThat(TransientFailures.isTransient(new SQLTransientConnectionException("timed out", "08001")))
                .isTrue();
    }

    /**
     * pgjdbc's 08004 (the connection rejected as configured: SSL or GSS encryption or channel binding required
     * and not offered, an authentication type it does not support, no password for SCRAM) does not pass by
     * waiting, nor in a pool's timeout; the rest of class 08 does.
     */
    @Test
    void aConnectionRejectedAsConfiguredIsNotEvenInAPoolTimeout() {
        assertThat(TransientFailures.isTransient(store("08004"))).isFalse();
        SQLException rejected = new SQLException("The server does not support SSL.", "08004");
        assertThat(TransientFailures.isTransient(new SQLTransientConnectionException("timed out", "08004", rejected)))
                .isFalse();
        for (String state : new String[] {"08000", "08007", "08P01"}) {
            assertThat(TransientFailures.isTransient(store(state))).as(state).isTrue();
        }
    }

    @Test
    void constraintViolationsTimeoutsAndFailuresWithoutAStateAreNot() {
        for (String state : new String[] {"23505", "42P01", "57014", "25P02", "53100", "42501", "0800", null}) {
            assertThat(TransientFailures.isTransient(store(state))).as(state).isFalse();
        }
        assertThat(TransientFailures.isTransient(new IllegalStateException("no SQL in here")))
                .isFalse();
    }

    @Test
    void aTransientStateFurtherDownTheChainOfNextExceptionsCounts() {
        SQLException batch = new SQLException("batch failed", "XX000");
        batch.setNextException(new SQLException("I/O error", "08006"));
        assertThat(TransientFailures.isTransient(batch)).isTrue();
    }

    @Test
    void aHandlerFailureIsRetriedOnlyIfTransientInATransactionalHandlerOrNamedByTheApplication() {
        Throwable lost = new RuntimeException(new SQLException("I/O error", "08006"));
        assertThat(policy(true).retries(handler(lost))).isTrue();
        assertThat(policy(false).retries(handler(lost))).isFalse(); // a plain handler's own database
        assertThat(policy(false).retries(handler(new IllegalArgumentException("named"))))
                .isTrue();
        assertThat(policy(true).retries(handler(new IllegalStateException("not named"))))
                .isFalse();
        assertThat(policy(true).retries(handler(new OutOfMemoryError()))).isFalse();
    }

    @Test
    void onlyTheStoresTransientFailuresAreRetriedAndNothingWithAZeroMaxTime() {
        assertThat(policy(false).retries(store("08006"))).isTrue();
        assertThat(policy(false).retries(store("23505"))).isFalse();
        assertThat(new RetryPolicy(Duration.ofMillis(1), Duration.ofMillis(1), Duration.ZERO, true, e -> true)
                        .retries(store("08006")))
                .isFalse();
    }

    @Test
    void theBackOffDoublesUpToItsMaximum() {
        RetryPolicy policy = policy(true);
        assertThat(policy.backoff(1)).isEqualTo(Duration.ofMillis(100));
        assertThat(policy.backoff(2)).isEqualTo(Duration.ofMillis(200));
        assertThat(policy.backoff(4)).isEqualTo(Duration.ofMillis(800));
        assertThat(policy.backoff(5)).isEqualTo(Duration.ofSeconds(1));
        assertThat(policy.backoff(1000)).isEqualTo(Duration.ofSeconds(1));
    }

    @Test
    void aRunOfFailuresEndsAfterTheMaxTime() {
        RetryPolicy policy =
                new RetryPolicy(Duration.ofMillis(1), Duration.ofMillis(1), Duration.ofNanos(1), true, e -> true);
        RetryPolicy.Attempts attempts = policy.attempts();
        assertThat(attempts.next(store("08006"))).isPositive();
        long until = System.nanoTime() + 1_000_000;
        while (System.nanoTime() < until) {
            Thread.onSpinWait(); // the run's 1 ns is over
        }
        assertThat(attempts.next(store("08006"))).isEqualTo(-1);
    }
}
