package dev.fencing.kafka;

import dev.fencing.kafka.spi.WatermarkStore;

/** A {@link WatermarkStore} could not load or save; the consumer stops rather than guess. */
public final class WatermarkStoreException extends FencedKafkaException {
    private static final long serialVersionUID = 1L;

    public WatermarkStoreException(String message, Throwable cause) {
        super(message, cause);
    }
}
