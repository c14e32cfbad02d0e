package dev.fencing.spring;

import dev.fencing.jdbc.FencedWriter;

/**
 * Adjusts the auto-configured {@link FencedWriter} before it is built, after the {@code fencing.jdbc.*}
 * properties and the application's {@code MeterRegistry} were applied. Declare it as a bean.
 */
@FunctionalInterface
public interface FencedWriterCustomizer {
    void customize(FencedWriter.Builder builder);
}
