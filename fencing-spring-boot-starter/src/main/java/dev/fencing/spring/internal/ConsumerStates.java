package dev.fencing.spring.internal;

import java.util.Map;

/** The declared consumers' states, as the health indicator reads them (kept free of Kafka types). */
public interface ConsumerStates {
    /**
     * Each declared consumer's state: {@code running}, {@code retrying (n retries so far)}, {@code starting},
     * {@code stopped}, or {@code failed: <reason>}.
     */
    Map<String, String> states();

    /** Whether any declared consumer makes no progress: retrying a transient failure, or failed. */
    boolean anyDown();
}
