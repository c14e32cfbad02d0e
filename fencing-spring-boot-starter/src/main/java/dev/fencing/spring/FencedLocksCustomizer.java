package dev.fencing.spring;

import dev.fencing.lock.zookeeper.FencedLocks;

/**
 * Adjusts the auto-configured {@link FencedLocks} before it is built, after the {@code fencing.locks.*}
 * properties were applied. Declare it as a bean. Prefer it to a {@link FencedLocks} bean of the application's:
 * only the starter's own {@link FencedLocks} passes lease events to {@code FencedLockListener} beans, the
 * lease meters and {@code @FencedLocked(interruptOnLoss = true)}. For the same reason, do not call {@code
 * builder.listener(...)} here (it replaces the starter's listener); declare a {@code FencedLockListener} bean.
 */
@FunctionalInterface
public interface FencedLocksCustomizer {
    void customize(FencedLocks.Builder builder);
}
