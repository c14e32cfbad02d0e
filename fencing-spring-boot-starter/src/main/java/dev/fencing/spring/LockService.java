package dev.fencing.spring;

import dev.fencing.lock.FencedLeaderElection;
import dev.fencing.lock.FencedLock;

/**
 * The lock service the starter's locks come from, ZooKeeper or etcd, behind one set of lock paths: methods
 * annotated {@link FencedLocked}, {@link FencedLockProvider}, {@link FencedLockRegistry} and {@link
 * FencedElectionParticipant} take their locks and elections from it, so the same code runs on either.
 *
 * <p>The starter makes the bean on the application's single {@code FencedLocks} (ZooKeeper) or {@code EtcdLocks}
 * (etcd). An application has one: with two and none {@code @Primary} it fails to start when the etcd
 * auto-configuration is on or a {@code FencedLocked} method needs one (see {@code fencing.lock-service}). Inject it
 * to make locks of your own:
 *
 * <pre>{@code
 * @Bean
 * FencedLockRegistry lockRegistry(LockService locks) {
 *     return new FencedLockRegistry(locks, "/locks/orders");
 * }
 * }</pre>
 *
 * <p><b>Lock paths</b> are ZooKeeper's form on both services: {@code /segment/segment...}, starting with {@code /},
 * no empty segment, no trailing {@code /}. On ZooKeeper the path is the lock's node. On etcd it is one lock name of
 * {@code EtcdLocks} (whose names hold no {@code /}): the path without its leading {@code /}, with {@code %} written
 * {@code %25} and {@code /} written {@code %2F}, so {@code /locks/inventory/A-1} has its contenders' keys under
 * {@code <fencing.etcd.prefix>/locks%2Finventory%2FA-1/}. Another process that locks the same resource through
 * {@code EtcdLocks} directly uses that name, under the same prefix.
 *
 * <p>Thread-safe. Locks of one path from one service are one lock, in every process that uses the same service
 * (the same ZooKeeper ensemble, or the same etcd cluster and prefix); the same path on the other service is another
 * lock, which is why an application refuses to start with both configured and no choice made.
 */
public interface LockService {

    /** {@code zookeeper} or {@code etcd}: the service's name in {@code fencing.lock-service} and in messages. */
    String name();

    /**
     * The lock at {@code path}.
     *
     * @throws IllegalArgumentException if the path is malformed (naming it)
     * @throws IllegalStateException if the service's lock factory is closed
     */
    FencedLock lock(String path);

    /**
     * A new participant, out of the election until it joins, in the election at {@code path}.
     *
     * @throws IllegalArgumentException if the path or the id is malformed
     * @throws IllegalStateException if the service's lock factory is closed
     */
    FencedLeaderElection election(String path, String participantId);
}
