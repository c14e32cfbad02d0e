package dev.fencing.kafka;

import dev.fencing.FencingException;

/**
 * Root of the real failures in this module (a stale record is not one: it is an expected outcome, counted
 * and dead-lettered). Unchecked; keeps its cause.
 */
public abstract class FencedKafkaException extends FencingException {
    private static final long serialVersionUID = 1L;

    protected FencedKafkaException(String message) {
        super(message, null, 0, null);
    }

    protected FencedKafkaException(String message, Throwable cause) {
        super(message, null, 0, cause);
    }
}
