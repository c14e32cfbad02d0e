/**
 * The backend-neutral lock API: locks ({@link dev.fencing.lock.FencedLock}, {@link
 * dev.fencing.lock.FencedReadWriteLock}), leader elections ({@link dev.fencing.lock.FencedLeaderElection}),
 * and the grants they hand out ({@link dev.fencing.lock.Lease}, {@link dev.fencing.lock.Leadership}), each
 * with a fence token that a protected resource checks on every write. This package holds no lock
 * service's client: a backend implements it, and an application obtains locks from that backend's
 * factory, {@code dev.fencing.lock.zookeeper.FencedLocks} in {@code fencing-zookeeper} (ZooKeeper through
 * Apache Curator), or the etcd backend's in {@code fencing-etcd}. Code that only acquires locks and writes
 * under their tokens can depend on this package alone and work with either.
 *
 * <p>{@code dev.fencing.lock.spi} is for backends, not for applications.
 */
package dev.fencing.lock;
