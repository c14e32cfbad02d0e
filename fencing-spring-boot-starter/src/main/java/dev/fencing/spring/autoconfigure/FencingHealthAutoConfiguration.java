package dev.fencing.spring.autoconfigure;

import dev.fencing.spring.FencedElectionParticipant;
import dev.fencing.spring.FencingProperties;
import dev.fencing.spring.internal.ConsumerStates;
import dev.fencing.spring.internal.EtcdConnection;
import dev.fencing.spring.internal.FencedLockedInterceptor;
import dev.fencing.spring.internal.FencingHealthIndicator;
import dev.fencing.spring.internal.LockServiceConnection;
import dev.fencing.spring.internal.ZooKeeperConnection;
import io.etcd.jetcd.Client;
import java.util.List;
import org.apache.curator.framework.CuratorFramework;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.AnyNestedCondition;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.ConfigurationCondition;

/**
 * The {@code fencing} health indicator ({@link FencingHealthIndicator}): the connection of the ZooKeeper or etcd
 * client, the declared consumers, the leases held by {@code @FencedLocked} methods and the election participant.
 * Present when Spring Boot's health support is on the class path and the application has a Curator client, a
 * jetcd client that the locks are on (fencing-etcd present, {@code fencing.etcd.enabled} not false, {@code
 * fencing.lock-service} not {@code zookeeper}) or declared consumers; off with {@code
 * management.health.fencing.enabled=false}; an application's own bean named {@code fencingHealthIndicator}
 * replaces it.
 */
@AutoConfiguration(
        after = {
            FencingZooKeeperAutoConfiguration.class,
            FencingEtcdAutoConfiguration.class,
            FencingLockedMethodsAutoConfiguration.class,
            FencingKafkaAutoConfiguration.class,
            FencingElectionAutoConfiguration.class
        })
@ConditionalOnClass(HealthIndicator.class)
@ConditionalOnEnabledHealthIndicator("fencing")
@Conditional(FencingHealthAutoConfiguration.SomethingToWatch.class)
public class FencingHealthAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean(name = "fencingHealthIndicator")
    public FencingHealthIndicator fencingHealthIndicator(
            ObjectProvider<LockServiceConnection> connections,
            ObjectProvider<ConsumerStates> consumers,
            ObjectProvider<FencedLockedInterceptor> locked,
            ObjectProvider<FencedElectionParticipant> election) {
        return new FencingHealthIndicator(
                connections.orderedStream().toList(),
                consumers.getIfUnique(),
                locked.getIfUnique(),
                election.getIfUnique());
    }

    /**
     * The Curator client's connection, only with Curator on the class path, unless {@code
     * fencing.zookeeper.enabled=false} or {@code fencing.lock-service} picks etcd: an application's Curator client
     * for something else is not the locks' to report.
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.apache.curator.framework.CuratorFramework")
    @ConditionalOnSwitch("fencing.zookeeper.enabled")
    @Conditional(LockServiceCondition.ZooKeeper.class)
    static class ZooKeeperHealthConfiguration {
        @Bean
        @ConditionalOnSingleCandidate(CuratorFramework.class)
        LockServiceConnection fencingZooKeeperConnection(CuratorFramework client) {
            return new ZooKeeperConnection(client);
        }
    }

    /**
     * The jetcd client's reach to etcd, only when the locks are on etcd: as for {@link FencingEtcdAutoConfiguration},
     * with fencing-etcd on the class path, unless {@code fencing.etcd.enabled=false} or {@code fencing.lock-service}
     * picks ZooKeeper. An application's jetcd client for something else is not the locks' to report.
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = {"io.etcd.jetcd.Client", "dev.fencing.lock.etcd.EtcdLocks"})
    @ConditionalOnSwitch("fencing.etcd.enabled")
    @Conditional(LockServiceCondition.Etcd.class)
    static class EtcdHealthConfiguration {
        @Bean
        @ConditionalOnSingleCandidate(Client.class)
        LockServiceConnection fencingEtcdConnection(
                Client client, ObjectProvider<FencingProperties> properties, ListableBeanFactory beans) {
            FencingProperties.Etcd etcd =
                    properties.getIfAvailable(FencingProperties::new).getEtcd();
            // the configured endpoints are this client's only when the starter made it
            List<String> endpoints = beans.containsBean("fencingEtcdClient") && etcd.getEndpoints() != null
                    ? etcd.getEndpoints()
                    : List.of();
            return new EtcdConnection(client, endpoints, etcd.getPrefix() == null ? "fencing" : etcd.getPrefix());
        }
    }

    /** A Curator client or a jetcd client the locks are on, or declared consumers. */
    static class SomethingToWatch extends AnyNestedCondition {
        SomethingToWatch() {
            super(ConfigurationCondition.ConfigurationPhase.REGISTER_BEAN);
        }

        @ConditionalOnBean(type = "org.apache.curator.framework.CuratorFramework")
        @ConditionalOnSwitch("fencing.zookeeper.enabled")
        @Conditional(LockServiceCondition.ZooKeeper.class)
        static class Curator {}

        @ConditionalOnClass(name = "dev.fencing.lock.etcd.EtcdLocks")
        @ConditionalOnBean(type = "io.etcd.jetcd.Client")
        @ConditionalOnSwitch("fencing.etcd.enabled")
        @Conditional(LockServiceCondition.Etcd.class)
        static class Etcd {}

        @ConditionalOnBean(ConsumerStates.class)
        static class Consumers {}
    }
}
