/**
 * Implementation of the ZooKeeper lock backend. Not API: anything here may change without notice; use
 * {@code dev.fencing.lock} and {@code dev.fencing.lock.zookeeper}.
 */
package dev.fencing.lock.zookeeper.internal;
