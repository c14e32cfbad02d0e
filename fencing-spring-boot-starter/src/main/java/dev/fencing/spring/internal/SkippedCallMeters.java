package dev.fencing.spring.internal;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.beans.factory.ObjectProvider;

/**
 * Counts, on the application's {@link MeterRegistry} if it has one, the calls of {@code @FencedLocked(skipIfLocked
 * = true)} methods that were skipped because another holder had the lock ({@code fencing.locked.skipped}, tagged
 * {@code method}). Not tagged by path: a path template over the arguments would grow one meter per value.
 */
public final class SkippedCallMeters implements SkippedCalls {
    private final ObjectProvider<MeterRegistry> registry;

    public SkippedCallMeters(ObjectProvider<MeterRegistry> registry) {
        this.registry = registry;
    }

    @Override
    public void skipped(String method, String lockPath) {
        registry.ifAvailable(r -> Counter.builder("fencing.locked.skipped")
                .description("Calls of @FencedLocked(skipIfLocked = true) methods skipped: another holder had the lock")
                .tag("method", method)
                .register(r)
                .increment());
    }
}
