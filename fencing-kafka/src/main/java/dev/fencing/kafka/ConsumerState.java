package dev.fencing.kafka;

/**
 * What a {@link FencedConsumer} is doing, for a health check: {@link FencedConsumer#state()}. A Spring Boot
 * health indicator, for one, maps {@link #RUNNING} to UP, {@link #RETRYING} to a degraded state (the consumer
 * waits for its store and makes no progress, but will go on by itself), and {@link #FAILED} to DOWN.
 */
public enum ConsumerState {
    /** Built, not started. */
    NEW,
    /** Polling and handling records. */
    RUNNING,
    /**
     * A transient failure rolled back a unit, record or group, which waits to run again from the same records
     * (the consumer's back-off); nothing passes it meanwhile. Back to {@link #RUNNING} once it has run, or
     * {@link #FAILED} after {@value FencedConsumerConfig#RETRY_MAX_MS_CONFIG}.
     */
    RETRYING,
    /**
     * Stopped by a failure ({@link FencedConsumer#failure()}); {@link FencedConsumer#restart()} starts it again
     * from what the store (or Kafka) committed.
     */
    FAILED,
    /** Closed by {@link FencedConsumer#close()}; it cannot start again. */
    CLOSED
}
