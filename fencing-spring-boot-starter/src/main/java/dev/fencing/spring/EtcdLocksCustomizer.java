package dev.fencing.spring;

import dev.fencing.lock.etcd.EtcdLocks;

/**
 * Adjusts the auto-configured {@link EtcdLocks} before it is built, after the {@code fencing.etcd.*} properties
 * were applied. Declare it as a bean. Prefer it to an {@link EtcdLocks} bean of the application's: only the
 * starter's own {@link EtcdLocks} passes lease events to {@code FencedLockListener} beans, the lease meters and
 * {@code @FencedLocked(interruptOnLoss = true)}, and a listener set here replaces that one.
 */
@FunctionalInterface
public interface EtcdLocksCustomizer {
    void customize(EtcdLocks.Builder builder);
}
