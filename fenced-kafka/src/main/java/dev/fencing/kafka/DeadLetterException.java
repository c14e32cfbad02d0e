package dev.fencing.kafka;

/**
 * A record could not be written to the dead-letter topic; the consumer stopped without committing past it,
 * so the record is read again after a restart instead of being lost.
 */
public final class DeadLetterException extends FencedKafkaException {
    private static final long serialVersionUID = 1L;

    public DeadLetterException(String message, Throwable cause) {
        super(message, cause);
    }
}
