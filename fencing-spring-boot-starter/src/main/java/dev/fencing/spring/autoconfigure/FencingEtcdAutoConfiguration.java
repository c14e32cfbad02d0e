package dev.fencing.spring.autoconfigure;

import dev.fencing.lock.FencedLockListener;
import dev.fencing.lock.etcd.EtcdLocks;
import dev.fencing.spring.EtcdLocksCustomizer;
import dev.fencing.spring.FencingProperties;
import dev.fencing.spring.LockService;
import dev.fencing.spring.internal.EtcdLockService;
import dev.fencing.spring.internal.FencingStartupException;
import dev.fencing.spring.internal.LeaseListeners;
import dev.fencing.spring.internal.LeaseMeters;
import dev.fencing.spring.internal.LockServicesCheck;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.ClientBuilder;
import io.micrometer.core.instrument.MeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;

/**
 * A jetcd {@link Client} from {@code fencing.etcd.*} (unless the application has a {@link Client} bean, or no
 * endpoint is set), {@link EtcdLocks} on the application's single client (unless it has an {@link EtcdLocks}
 * bean), and the {@link LockService} on them that {@code @FencedLocked} methods, the ShedLock provider and the
 * election use. The starter closes the client only if it made it; the locks close before the client. The locks'
 * listener passes every lease event to each {@link FencedLockListener} bean; with Micrometer, lease
 * invalidations are counted. Needs fencing-etcd (and so jetcd) on the class path, never Curator. Off with
 * {@code fencing.etcd.enabled=false}, or when {@code fencing.lock-service=zookeeper}.
 */
@AutoConfiguration(after = FencingZooKeeperAutoConfiguration.class)
@ConditionalOnClass({Client.class, EtcdLocks.class})
@ConditionalOnSwitch("fencing.etcd.enabled")
@Conditional(LockServiceCondition.Etcd.class)
@EnableConfigurationProperties(FencingProperties.class)
public class FencingEtcdAutoConfiguration {

    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    @Conditional(LockServiceCondition.EtcdEndpoints.class)
    public Client fencingEtcdClient(FencingProperties properties) {
        FencingProperties.Etcd etcd = properties.getEtcd();
        List<String> endpoints = etcd.getEndpoints();
        if (endpoints.stream().anyMatch(e -> e == null || e.isBlank())) {
            throw new FencingStartupException(
                    "fencing.etcd.endpoints " + endpoints + " holds an empty endpoint",
                    "Set fencing.etcd.endpoints to the members' client URLs, like http://etcd1:2379,http://etcd2:2379");
        }
        Duration startup = Timeouts.zeroOrPositive("fencing.etcd.startup-timeout", etcd.getStartupTimeout());
        boolean user = etcd.getUser() != null;
        if (user != (etcd.getPassword() != null)) {
            throw new IllegalStateException("fencing.etcd." + (user ? "password" : "user")
                    + " is missing: set both fencing.etcd.user and .password, or neither");
        }
        ClientBuilder builder;
        try {
            builder = Client.builder().endpoints(endpoints.toArray(String[]::new));
        } catch (IllegalArgumentException e) {
            throw new FencingStartupException(
                    "fencing.etcd.endpoints " + endpoints + " is not a list of URLs: " + e.getMessage(),
                    "Set fencing.etcd.endpoints to the members' client URLs, like http://etcd1:2379,http://etcd2:2379",
                    e);
        }
        if (user) {
            builder.user(bytes(etcd.getUser())).password(bytes(etcd.getPassword()));
        }
        if (etcd.getConnectTimeout() != null) {
            builder.connectTimeout(Duration.ofMillis(
                    Timeouts.positiveMillis("fencing.etcd.connect-timeout", etcd.getConnectTimeout())));
        }
        Client client = builder.build();
        if (!startup.isZero()) {
            awaitAnswer(client, endpoints, etcd.getPrefix(), startup);
        }
        return client;
    }

    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    @ConditionalOnSingleCandidate(Client.class)
    public EtcdLocks etcdLocks(
            Client client,
            FencingProperties properties,
            ObjectProvider<FencedLockListener> listeners,
            ObjectProvider<EtcdLocksCustomizer> customizers) {
        FencingProperties.Etcd etcd = properties.getEtcd();
        EtcdLocks.Builder builder = EtcdLocks.builder(client).listener(new LeaseListeners(listeners));
        set("fencing.etcd.prefix", () -> builder.prefix(etcd.getPrefix()));
        set("fencing.etcd.lease-ttl", () -> builder.leaseTtl(etcd.getLeaseTtl()));
        if (etcd.getPauseTolerance() != null) {
            set("fencing.etcd.pause-tolerance", () -> builder.pauseTolerance(etcd.getPauseTolerance()));
        }
        customizers.orderedStream().forEach(c -> c.customize(builder));
        try {
            return builder.build();
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException("fencing.etcd.pause-tolerance and lease-ttl: " + e.getMessage(), e);
        }
    }

    /**
     * The lock service on etcd. The {@code fencing.locks.*} settings are ZooKeeper's locks' (etcd's are under {@code
     * fencing.etcd}): one set while the locks are on etcd fails the start naming it, since ignored it would leave
     * the locks with another pause tolerance than the one the application asked for.
     */
    @Bean
    @ConditionalOnSingleCandidate(EtcdLocks.class)
    public LockService etcdLockService(EtcdLocks locks, Environment env) {
        Binder binder = Binder.get(env);
        for (String setting : List.of("pause-tolerance", "sequence-wrap-margin", "token-source")) {
            String property = "fencing.locks." + setting;
            binder.bind(property, String.class).ifBound(value -> {
                throw new FencingStartupException(
                        property + " is set to " + value + ", a ZooKeeper setting, but the lock service is etcd",
                        setting.equals("pause-tolerance")
                                ? "Set fencing.etcd.pause-tolerance instead, and remove " + property
                                : "Remove " + property + " (etcd's tokens are its keys' create revisions)");
            });
        }
        return new EtcdLockService(locks);
    }

    @Bean
    @ConditionalOnMissingBean(name = "fencingLockServicesCheck")
    public static LockServicesCheck fencingLockServicesCheck(ListableBeanFactory beans) {
        return new LockServicesCheck(beans);
    }

    /** A bad value fails the start naming its property, never replaced by a default. */
    private static void set(String property, Runnable setter) {
        try {
            setter.run();
        } catch (IllegalArgumentException | NullPointerException e) {
            throw new IllegalStateException(property + ": " + e.getMessage(), e);
        }
    }

    private static ByteSequence bytes(String text) {
        return ByteSequence.from(text, StandardCharsets.UTF_8);
    }

    /**
     * Fails the start, naming the endpoints, when the cluster answers no read within {@code startup}: jetcd
     * connects lazily, and a wrong address would otherwise show only later, as every locked call failing.
     */
    private static void awaitAnswer(Client client, List<String> endpoints, String prefix, Duration startup) {
        CompletableFuture<?> read = client.getKVClient().get(bytes(prefix == null ? "fencing" : prefix));
        try {
            read.get(startup.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            client.close();
            throw new IllegalStateException("interrupted while connecting to etcd at " + endpoints, e);
        } catch (TimeoutException | ExecutionException e) {
            read.cancel(true);
            client.close();
            throw new FencingStartupException(
                    "no etcd member at " + endpoints + " (fencing.etcd.endpoints) answered a read within " + startup
                            + " (fencing.etcd.startup-timeout)"
                            + (e instanceof ExecutionException ? ": " + e.getCause() : ""),
                    "Check the endpoints, the credentials and that the cluster is up, or set"
                            + " fencing.etcd.startup-timeout=0 to start without waiting",
                    e);
        }
    }

    /** Counts lease invalidations on the application's meter registry, if it has one. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(MeterRegistry.class)
    @ConditionalOnSwitch("fencing.metrics.enabled")
    static class LeaseMetricsConfiguration {
        @Bean
        @ConditionalOnMissingBean(name = "fencingLeaseMeters")
        LeaseMeters fencingLeaseMeters(ObjectProvider<MeterRegistry> registry) {
            return new LeaseMeters(registry);
        }
    }
}
