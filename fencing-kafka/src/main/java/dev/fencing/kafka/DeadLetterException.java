package dev.fencing.kafka;

/**
 * A refused record could not be written to its dead-letter topic (the write failed, or the unit's
 * dead-letter writes took longer than {@value FencedConsumerConfig#DEAD_LETTER_TIMEOUT_MS_CONFIG}). The
 * consumer stopped at the first such record without committing past it, so it is read again after a restart
 * instead of being lost.
 */
public final class DeadLetterException extends FencedKafkaException {
    private static final long serialVersionUID = 1L;

    private final String deadLetterTopic;

    /**
     * @param deadLetterTopic the topic the record was to go to
     * @param origin the record's topic, partition and offset, as text
     * @param why what went wrong
     */
    public DeadLetterException(String deadLetterTopic, String origin, String why, Throwable cause) {
        super(
                "could not dead-letter " + origin + " to topic " + deadLetterTopic + ": " + why
                        + "; the consumer stopped without committing past it",
                origin,
                0,
                cause);
        this.deadLetterTopic = deadLetterTopic;
    }

    /** The dead-letter topic that could not be written. */
    public String deadLetterTopic() {
        return deadLetterTopic;
    }
}
