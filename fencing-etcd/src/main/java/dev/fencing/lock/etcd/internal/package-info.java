/**
 * The implementation of {@code fencing-etcd}'s locks. Not API: anything here may change in any release; use
 * {@link dev.fencing.lock.etcd.EtcdLocks} and the interfaces of {@code dev.fencing.lock}.
 */
package dev.fencing.lock.etcd.internal;
