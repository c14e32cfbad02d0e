/**
 * Fenced locks and leader elections on etcd: {@link dev.fencing.lock.etcd.EtcdLocks} makes the {@code
 * dev.fencing.lock} API's locks and elections on a jetcd client, with the lock key's create revision as the fence
 * token. The implementation is in {@code dev.fencing.lock.etcd.internal}, which is not API.
 */
package dev.fencing.lock.etcd;
