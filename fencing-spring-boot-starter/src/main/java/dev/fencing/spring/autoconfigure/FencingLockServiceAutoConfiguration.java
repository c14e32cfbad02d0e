package dev.fencing.spring.autoconfigure;

import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.context.annotation.Conditional;

/**
 * Checks {@code fencing.lock-service} in every application with the starter, before either lock service's
 * auto-configuration: a value that names no lock service, or one whose module is not on the class path (say {@code
 * etcd} without fencing-etcd), fails the start naming the value and the dependency to add. Without it, the named
 * service's auto-configuration would not be considered and the other's would step aside: the application would
 * start with no lock service. Makes no bean.
 */
@AutoConfiguration(before = {FencingZooKeeperAutoConfiguration.class, FencingEtcdAutoConfiguration.class})
@Conditional(LockServiceCondition.Available.class)
public class FencingLockServiceAutoConfiguration {}
