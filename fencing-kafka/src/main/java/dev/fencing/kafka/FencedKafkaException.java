package dev.fencing.kafka;

import dev.fencing.FencingException;

/**
 * Root of the real failures in this module (a stale record is not one: it is an expected outcome, counted
 * and dead-lettered). Unchecked; keeps its cause. Its {@link #resource()} is the topic, partition or record
 * involved, as text, and {@link #token()} the record's token where one is known (0 otherwise).
 */
public abstract class FencedKafkaException extends FencingException {
    private static final long serialVersionUID = 1L;

    protected FencedKafkaException(String message) {
        super(message, null, 0, null);
    }

    protected FencedKafkaException(String message, Throwable cause) {
        super(message, null, 0, cause);
    }

    protected FencedKafkaException(String message, String resource, long token, Throwable cause) {
        super(message, resource, token, cause);
    }
}
