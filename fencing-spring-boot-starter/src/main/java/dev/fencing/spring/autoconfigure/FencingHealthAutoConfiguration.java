package dev.fencing.spring.autoconfigure;

import dev.fencing.spring.FencedElectionParticipant;
import dev.fencing.spring.internal.ConsumerStates;
import dev.fencing.spring.internal.FencedLockedInterceptor;
import dev.fencing.spring.internal.FencingHealthIndicator;
import org.apache.curator.framework.CuratorFramework;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.AnyNestedCondition;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.ConfigurationCondition;

/**
 * The {@code fencing} health indicator ({@link FencingHealthIndicator}): the ZooKeeper connection, the
 * declared consumers, the leases held by {@code @FencedLocked} methods and the election participant. Present when Spring Boot's
 * health support is on the class path and the application has a Curator client or declared consumers;
 * off with {@code management.health.fencing.enabled=false}; an application's own bean named {@code
 * fencingHealthIndicator} replaces it.
 */
@AutoConfiguration(
        after = {
            FencingZooKeeperAutoConfiguration.class,
            FencingLockedMethodsAutoConfiguration.class,
            FencingKafkaAutoConfiguration.class,
            FencingElectionAutoConfiguration.class
        })
@ConditionalOnClass({HealthIndicator.class, CuratorFramework.class})
@ConditionalOnEnabledHealthIndicator("fencing")
@Conditional(FencingHealthAutoConfiguration.SomethingToWatch.class)
public class FencingHealthAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean(name = "fencingHealthIndicator")
    public FencingHealthIndicator fencingHealthIndicator(
            ObjectProvider<CuratorFramework> client,
            ObjectProvider<ConsumerStates> consumers,
            ObjectProvider<FencedLockedInterceptor> locked,
            ObjectProvider<FencedElectionParticipant> election) {
        return new FencingHealthIndicator(
                client.getIfUnique(), consumers.getIfUnique(), locked.getIfUnique(), election.getIfUnique());
    }

    /** A Curator client or declared consumers. */
    static class SomethingToWatch extends AnyNestedCondition {
        SomethingToWatch() {
            super(ConfigurationCondition.ConfigurationPhase.REGISTER_BEAN);
        }

        @ConditionalOnBean(CuratorFramework.class)
        static class Curator {}

        @ConditionalOnBean(ConsumerStates.class)
        static class Consumers {}
    }
}
