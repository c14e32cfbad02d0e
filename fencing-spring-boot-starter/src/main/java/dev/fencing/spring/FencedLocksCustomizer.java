package dev.fencing.spring;

import dev.fencing.lock.FencedLocks;

/**
 * Adjusts the auto-configured {@link FencedLocks} before it is built, after the {@code fencing.locks.*}
 * properties were applied. Declare it as a bean.
 */
@FunctionalInterface
public interface FencedLocksCustomizer {
    void customize(FencedLocks.Builder builder);
}
