package dev.fencing.kafka;

/** A {@value FenceTokenHeader#NAME} header that is not 8 bytes holding a positive big-endian long. */
public final class InvalidFenceTokenException extends FencedKafkaException {
    private static final long serialVersionUID = 1L;

    public InvalidFenceTokenException(String message) {
        super(message);
    }
}
