package dev.fencing.spring.autoconfigure;

import dev.fencing.spring.internal.LeasesCheckedAtCommit;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Role;
import org.springframework.transaction.ConfigurableTransactionManager;

/**
 * Rolls back a transaction begun under a lease of a {@code @FencedLocked} method or a ShedLock job at its commit once
 * the lease is known lost ({@link LeasesCheckedAtCommit}), in every transaction manager of the context that takes
 * listeners. Imported by both auto-configurations that take such leases (once, whichever imports it), so that
 * switching one of them off does not drop the check for the other's.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnClass(ConfigurableTransactionManager.class)
class LeaseCommitCheckConfiguration {
    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    static BeanPostProcessor fencingLeasesCheckedAtCommit() {
        return LeasesCheckedAtCommit.addToTransactionManagers();
    }
}
