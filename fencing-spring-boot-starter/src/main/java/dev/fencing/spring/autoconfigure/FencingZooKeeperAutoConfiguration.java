package dev.fencing.spring.autoconfigure;

import dev.fencing.lock.FencedLockListener;
import dev.fencing.lock.zookeeper.FencedLocks;
import dev.fencing.lock.zookeeper.ZooKeeperDigest;
import dev.fencing.spring.FencedLocksCustomizer;
import dev.fencing.spring.FencingProperties;
import dev.fencing.spring.LockService;
import dev.fencing.spring.internal.FencingStartupException;
import dev.fencing.spring.internal.LeaseListeners;
import dev.fencing.spring.internal.LeaseMeters;
import dev.fencing.spring.internal.ZooKeeperLockService;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;

/**
 * A started Curator client from {@code fencing.zookeeper.*} (unless the application has a {@link
 * CuratorFramework} bean, or no connect string is set), and {@link FencedLocks} on the application's single
 * Curator client (unless it has a {@link FencedLocks} bean). The locks' listener passes every lease event to
 * each {@link FencedLockListener} bean; with Micrometer, lease invalidations are counted on the
 * application's {@code MeterRegistry}. Off with {@code fencing.zookeeper.enabled=false}.
 *
 * <p>An application's own {@link FencedLocks} bean is used as it is: it was built without the starter's
 * listener, so {@link FencedLockListener} beans, the lease meters and {@code @FencedLocked(interruptOnLoss =
 * true)} hear nothing from it. Adjust the starter's locks with a {@code FencedLocksCustomizer} bean instead.
 *
 * <p>With {@code fencing.zookeeper.digest.user} and {@code .password} the client authenticates with them
 * and the locks' nodes get an ACL admitting only that user (also for an application's own client, which
 * must then authenticate itself).
 *
 * <p>Also the {@link LockService} on the locks, which {@code @FencedLocked} methods, the ShedLock provider and the
 * election use. Off, too, when {@code fencing.lock-service=etcd}.
 */
@AutoConfiguration
@ConditionalOnClass({CuratorFramework.class, FencedLocks.class})
@ConditionalOnSwitch("fencing.zookeeper.enabled")
@Conditional(LockServiceCondition.ZooKeeper.class)
@EnableConfigurationProperties(FencingProperties.class)
public class FencingZooKeeperAutoConfiguration {
    /** The most retries Curator's {@code ExponentialBackoffRetry} makes (its back-off would overflow beyond). */
    static final int MAX_RETRIES = 29;
    /** The {@code fencing.etcd.*} settings that configure etcd's client and locks (not the switch). */
    private static final List<String> ETCD_SETTINGS = List.of(
            "endpoints",
            "prefix",
            "lease-ttl",
            "pause-tolerance",
            "user",
            "password",
            "connect-timeout",
            "startup-timeout");

    private static final Logger LOG = LoggerFactory.getLogger(FencingZooKeeperAutoConfiguration.class);

    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    @ConditionalOnProperty("fencing.zookeeper.connect-string")
    public CuratorFramework fencingCuratorFramework(FencingProperties properties) {
        FencingProperties.ZooKeeper zk = properties.getZookeeper();
        String connect = zk.getConnectString();
        if (connect == null || connect.isBlank()) {
            throw new FencingStartupException(
                    "fencing.zookeeper.connect-string is empty",
                    "Set fencing.zookeeper.connect-string to host:port[,host:port...][/chroot], or remove it and give"
                            + " the application a CuratorFramework bean, or set fencing.zookeeper.enabled=false");
        }
        Duration startup = Timeouts.zeroOrPositive("fencing.zookeeper.startup-timeout", zk.getStartupTimeout());
        int retries = zk.getRetryMaxRetries();
        if (retries < 0 || retries > MAX_RETRIES) {
            // Curator would take a negative count as no retry at all, and pin a greater one to its limit
            throw new IllegalStateException("fencing.zookeeper.retry-max-retries must be from 0 to " + MAX_RETRIES
                    + " (Curator's exponential back-off retries at most that often), got " + retries);
        }
        CuratorFrameworkFactory.Builder builder = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(millis("fencing.zookeeper.session-timeout", zk.getSessionTimeout()))
                .connectionTimeoutMs(millis("fencing.zookeeper.connection-timeout", zk.getConnectionTimeout()))
                .retryPolicy(new ExponentialBackoffRetry(
                        millis("fencing.zookeeper.retry-base-sleep", zk.getRetryBaseSleep()), retries));
        String namespace = zk.getNamespace();
        if (namespace != null && !namespace.isEmpty()) {
            if (!namespace.strip().equals(namespace)) {
                // Curator takes it as given: "orders " is another tree than "orders", and an instance configured
                // with it takes the locks the others hold
                throw new IllegalStateException("fencing.zookeeper.namespace '" + namespace + "' has whitespace at its"
                        + " start or end, which Curator keeps: it would be another namespace than "
                        + (namespace.isBlank() ? "none" : "'" + namespace.strip() + "'")
                        + ", whose locks an instance configured without the whitespace would hold at the same time"
                        + " (a properties file keeps a value's trailing blanks). Remove the whitespace");
            }
            builder.namespace(namespace);
        }
        ZooKeeperDigest digest = digest(zk.getDigest());
        if (digest != null) {
            builder.authorization(List.of(digest.authInfo()));
        }
        CuratorFramework client = builder.build();
        client.start();
        if (!startup.isZero()) {
            awaitConnection(client, connect, startup);
        }
        return client;
    }

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnSingleCandidate(CuratorFramework.class)
    public FencedLocks fencedLocks(
            CuratorFramework client,
            FencingProperties properties,
            ObjectProvider<FencedLockListener> listeners,
            ObjectProvider<FencedLocksCustomizer> customizers) {
        FencingProperties.Locks settings = properties.getLocks();
        FencedLocks.Builder builder = FencedLocks.builder(client)
                .tokenSource(settings.getTokenSource())
                .listener(new LeaseListeners(listeners));
        if (settings.getPauseTolerance() != null) {
            set("fencing.locks.pause-tolerance", () -> builder.pauseTolerance(settings.getPauseTolerance()));
        }
        if (settings.getSequenceWrapMargin() != null) {
            set(
                    "fencing.locks.sequence-wrap-margin",
                    () -> builder.sequenceWrapMargin(settings.getSequenceWrapMargin()));
        }
        ZooKeeperDigest digest = digest(properties.getZookeeper().getDigest());
        if (digest != null) {
            builder.acl(digest.acl());
        }
        customizers.orderedStream().forEach(c -> c.customize(builder));
        try {
            return builder.build();
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException(
                    "fencing.locks.pause-tolerance and fencing.zookeeper.session-timeout: " + e.getMessage(), e);
        }
    }

    /**
     * The lock service on ZooKeeper. The {@code fencing.etcd.*} settings are etcd's: set while the locks are on
     * ZooKeeper they are ignored, as Spring Boot ignores the settings of a technology not in use (a shared profile
     * may hold both services' settings), with one WARN at start naming them (not their values), so that a setting
     * meant for these locks is not taken for applied.
     */
    @Bean
    @ConditionalOnSingleCandidate(FencedLocks.class)
    public LockService zooKeeperLockService(FencedLocks locks, Environment env) {
        Binder binder = Binder.get(env);
        List<String> ignored = ETCD_SETTINGS.stream()
                .map(setting -> "fencing.etcd." + setting)
                .filter(property ->
                        binder.bind(property, Bindable.listOf(String.class)).isBound())
                .toList();
        if (!ignored.isEmpty()) {
            LOG.warn(
                    "{} {} set, but the lock service is zookeeper: they are ignored. Remove them, or set"
                            + " fencing.lock-service=etcd to lock on etcd",
                    String.join(", ", ignored),
                    ignored.size() == 1 ? "is" : "are");
        }
        return new ZooKeeperLockService(locks);
    }

    /** Runs a builder setter, naming {@code property} in the failure of a value the builder refuses. */
    private static void set(String property, Runnable setter) {
        try {
            setter.run();
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException(property + ": " + e.getMessage(), e);
        }
    }

    private static ZooKeeperDigest digest(FencingProperties.Digest digest) {
        boolean user = digest.getUser() != null;
        boolean password = digest.getPassword() != null;
        if (user != password) {
            throw new IllegalStateException("fencing.zookeeper.digest." + (user ? "password" : "user")
                    + " is missing: set both fencing.zookeeper.digest.user and .password, or neither");
        }
        return user ? ZooKeeperDigest.of(digest.getUser(), digest.getPassword()) : null;
    }

    /**
     * Fails the start, naming the address, when no ZooKeeper server answers within {@code startup}: a wrong
     * address would otherwise show only later, as every locked call waiting out Curator's retries.
     */
    private static void awaitConnection(CuratorFramework client, String connect, Duration startup) {
        boolean connected;
        try {
            connected = client.blockUntilConnected((int) startup.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            client.close();
            throw new IllegalStateException("interrupted while connecting to ZooKeeper at " + connect, e);
        }
        if (!connected) {
            client.close();
            throw new FencingStartupException(
                    "no ZooKeeper server at " + connect + " (fencing.zookeeper.connect-string) answered within "
                            + startup + " (fencing.zookeeper.startup-timeout)",
                    "Check the address and that the ensemble is up, or set fencing.zookeeper.startup-timeout=0 to"
                            + " start without waiting");
        }
    }

    private static int millis(String property, java.time.Duration value) {
        return Timeouts.positiveMillis(property, value);
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
