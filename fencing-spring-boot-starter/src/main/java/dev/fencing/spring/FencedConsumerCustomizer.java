package dev.fencing.spring;

import dev.fencing.kafka.FencedConsumerBuilder;

/**
 * Adjusts each consumer declared under {@code fencing.kafka.consumers.<name>} before it is built, after
 * its properties, handler, store and the application's {@code MeterRegistry} were applied. Declare it as a
 * bean.
 */
@FunctionalInterface
public interface FencedConsumerCustomizer {
    void customize(String name, FencedConsumerBuilder<?, ?> builder);
}
