package dev.fencing.kafka;

/**
 * Root of the real failures in this module (a stale record is not one: it is an expected outcome, counted
 * and dead-lettered). Unchecked; keeps its cause.
 */
public abstract class FencedKafkaException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    protected FencedKafkaException(String message) {
        super(message);
    }

    protected FencedKafkaException(String message, Throwable cause) {
        super(message, cause);
    }
}
