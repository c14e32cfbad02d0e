/**
 * The ZooKeeper backend of {@code dev.fencing.lock}, through Apache Curator: {@link
 * dev.fencing.lock.zookeeper.FencedLocks} makes locks, read/write locks and leader elections on a started
 * Curator client, each lock with its {@link dev.fencing.lock.zookeeper.TokenSource} (the lock node's
 * sequence number or its zxid); {@link dev.fencing.lock.zookeeper.ZooKeeperDigest} makes digest ACLs.
 */
package dev.fencing.lock.zookeeper;
