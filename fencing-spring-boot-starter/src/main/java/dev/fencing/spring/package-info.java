/**
 * Spring Boot support for the fencing toolkit: {@link dev.fencing.spring.FencedLocked} methods on ZooKeeper's or
 * etcd's locks ({@link dev.fencing.spring.LockService}), the {@code
 * fencing.*} properties ({@link dev.fencing.spring.FencingProperties}) and customizers of the
 * auto-configured locks, writer, consumers and {@code FencedRedis}; for scheduled jobs and Spring's lock
 * abstractions, {@link dev.fencing.spring.CurrentLease}, ShedLock's {@link dev.fencing.spring.FencedLockProvider},
 * Spring Integration's {@link dev.fencing.spring.FencedLockRegistry} and the election's {@link
 * dev.fencing.spring.FencedElectionParticipant} with its {@link dev.fencing.spring.TermStartedEvent} and {@link
 * dev.fencing.spring.TermEndedEvent}. The auto-configuration itself is in {@code
 * dev.fencing.spring.autoconfigure}.
 */
package dev.fencing.spring;
