package dev.fencing.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.FencePolicy;
import dev.fencing.jdbc.FencedWriter;
import dev.fencing.kafka.FencedConsumer;
import dev.fencing.kafka.RecordHandler;
import dev.fencing.kafka.TransactionalRecordHandler;
import dev.fencing.lock.FencedLockListener;
import dev.fencing.lock.zookeeper.FencedLocks;
import dev.fencing.spring.autoconfigure.FencingElectionAutoConfiguration;
import dev.fencing.spring.autoconfigure.FencingEtcdAutoConfiguration;
import dev.fencing.spring.autoconfigure.FencingFlywayAutoConfiguration;
import dev.fencing.spring.autoconfigure.FencingHealthAutoConfiguration;
import dev.fencing.spring.autoconfigure.FencingJdbcAutoConfiguration;
import dev.fencing.spring.autoconfigure.FencingKafkaAutoConfiguration;
import dev.fencing.spring.autoconfigure.FencingLockedMethodsAutoConfiguration;
import dev.fencing.spring.autoconfigure.FencingShedLockAutoConfiguration;
import dev.fencing.spring.autoconfigure.FencingZooKeeperAutoConfiguration;
import dev.fencing.spring.internal.DeclaredConsumers;
import dev.fencing.spring.internal.FencedLockedInterceptor;
import dev.fencing.spring.internal.FencingHealthIndicator;
import dev.fencing.spring.internal.LeaseMeters;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.io.StringReader;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import javax.sql.DataSource;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryOneTime;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.Location;
import org.flywaydb.core.api.configuration.FluentConfiguration;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;
import org.springframework.aop.Advisor;
import org.springframework.aop.framework.ProxyFactory;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.support.DefaultListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.flyway.autoconfigure.FlywayConfigurationCustomizer;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.io.ClassPathResource;

/**
 * Every condition of the starter's auto-configuration, without servers: each part is present when what it
 * needs is, absent when it is not, backs off for the application's own bean, and goes when its property
 * switches it off. The Curator client points at a port where nothing listens (the client connects in the
 * background; nothing here waits for it) and the data source at a database nobody opens.
 */
class FencingAutoConfigurationTest {
    private static final String NOWHERE = "127.0.0.1:1";

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    FencingZooKeeperAutoConfiguration.class,
                    FencingEtcdAutoConfiguration.class,
                    FencingLockedMethodsAutoConfiguration.class,
                    FencingJdbcAutoConfiguration.class,
                    FencingFlywayAutoConfiguration.class,
                    FencingKafkaAutoConfiguration.class,
                    FencingHealthAutoConfiguration.class,
                    FencingShedLockAutoConfiguration.class,
                    FencingElectionAutoConfiguration.class));

    /** A client of nowhere that the start does not wait for (the start-up check is tested below). */
    private final ApplicationContextRunner zookeeper = runner.withPropertyValues(
            "fencing.zookeeper.connect-string=" + NOWHERE, "fencing.zookeeper.startup-timeout=0");

    @Test
    void noZooKeeperAnsweringWithinTheStartupTimeoutFailsTheStartNamingTheAddress() {
        runner.withPropertyValues(
                        "fencing.zookeeper.connect-string=" + NOWHERE, "fencing.zookeeper.startup-timeout=300ms")
                .run(context -> assertThat(context)
                        .getFailure()
                        .rootCause()
                        .isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("no ZooKeeper server at " + NOWHERE)
                        .hasMessageContaining("fencing.zookeeper.connect-string")
                        .hasMessageContaining("fencing.zookeeper.startup-timeout"));
    }

    @Test
    void anEmptyConnectStringOrANegativeStartupTimeoutFailsTheStartNamingTheProperty() {
        runner.withPropertyValues("fencing.zookeeper.connect-string= ").run(context -> assertThat(context)
                .getFailure()
                .rootCause()
                .hasMessageContaining("fencing.zookeeper.connect-string is empty"));
        runner.withPropertyValues(
                        "fencing.zookeeper.connect-string=" + NOWHERE, "fencing.zookeeper.startup-timeout=-1s")
                .run(context -> assertThat(context)
                        .getFailure()
                        .rootCause()
                        .hasMessageContaining("fencing.zookeeper.startup-timeout must be a duration >= 0"));
    }

    // ---- Curator client and FencedLocks

    @Test
    void aConnectStringGivesAStartedCuratorClientAndFencedLocksOnIt() {
        zookeeper.run(context -> {
            assertThat(context).hasSingleBean(CuratorFramework.class).hasSingleBean(FencedLocks.class);
            assertThat(context.getBean(CuratorFramework.class)
                            .getZookeeperClient()
                            .getCurrentConnectionString())
                    .isEqualTo(NOWHERE);
        });
    }

    @Test
    void withoutAConnectStringThereIsNoClientAndNoLocks() {
        runner.run(context ->
                assertThat(context).doesNotHaveBean(CuratorFramework.class).doesNotHaveBean(FencedLocks.class));
    }

    @Test
    void theApplicationsCuratorClientWinsAndGetsTheLocks() {
        zookeeper.withUserConfiguration(OwnCurator.class).run(context -> {
            assertThat(context).hasSingleBean(CuratorFramework.class).hasSingleBean(FencedLocks.class);
            assertThat(context.getBean(CuratorFramework.class)).isSameAs(context.getBean("ownCurator"));
        });
    }

    @Test
    void theApplicationsFencedLocksWin() {
        zookeeper.withUserConfiguration(OwnLocks.class).run(context -> {
            assertThat(context).hasSingleBean(FencedLocks.class);
            assertThat(context.getBean(FencedLocks.class)).isSameAs(context.getBean("ownLocks"));
        });
    }

    @Test
    void zookeeperEnabledFalseSwitchesClientAndLocksOff() {
        zookeeper.withPropertyValues("fencing.zookeeper.enabled=false").run(context -> assertThat(context)
                .doesNotHaveBean(CuratorFramework.class)
                .doesNotHaveBean(FencedLocks.class));
    }

    @Test
    void withoutCuratorOnTheClassPathThereIsNoClient() {
        zookeeper
                .withClassLoader(new FilteredClassLoader(CuratorFramework.class))
                .run(context -> assertThat(context).doesNotHaveBean(FencedLocks.class));
    }

    @Test
    void aDigestUserWithoutPasswordIsRefusedNamingTheMissingProperty() {
        zookeeper.withPropertyValues("fencing.zookeeper.digest.user=orders").run(context -> assertThat(context)
                .getFailure()
                .rootCause()
                .hasMessageContaining("fencing.zookeeper.digest.password is missing"));
    }

    @Test
    void aZeroSessionTimeoutIsRefusedNamingTheProperty() {
        zookeeper.withPropertyValues("fencing.zookeeper.session-timeout=0s").run(context -> assertThat(context)
                .getFailure()
                .rootCause()
                .hasMessageContaining("fencing.zookeeper.session-timeout must be a positive duration, got PT0S"));
    }

    /**
     * A duration under a millisecond is positive, but the clients take milliseconds: 500 us would reach Curator as
     * a session timeout of 0 ms. The start must fail naming the value.
     */
    @Test
    void aSessionTimeoutUnderAMillisecondIsRefusedNamingTheValue() {
        zookeeper.withPropertyValues("fencing.zookeeper.session-timeout=500us").run(context -> assertThat(context)
                .getFailure()
                .rootCause()
                .hasMessageContaining("fencing.zookeeper.session-timeout must be a positive duration, got PT0.0005S")
                .hasMessageContaining("at least 1 ms"));
    }

    /**
     * Curator takes a negative retry count as "never retry" (every connection loss fails the operation at once) and
     * pins one above 29 to 29: the start must fail on the value instead, naming the property and the value.
     */
    @Test
    void aRetryCountCuratorWouldNotTakeAsGivenFailsTheStartNamingPropertyAndValue() {
        for (String retries : new String[] {"-1", "30"}) {
            zookeeper
                    .withPropertyValues("fencing.zookeeper.retry-max-retries=" + retries)
                    .run(context -> assertThat(context)
                            .as("fencing.zookeeper.retry-max-retries=%s", retries)
                            .getFailure()
                            .rootCause()
                            .hasMessageStartingWith("fencing.zookeeper.retry-max-retries must be from 0 to 29")
                            .hasMessageEndingWith("got " + retries));
        }
        zookeeper.withPropertyValues("fencing.zookeeper.retry-max-retries=0").run(context -> assertThat(context)
                .hasNotFailed());
    }

    /**
     * A properties file keeps a value's trailing blanks, and Curator takes a namespace as given: {@code "orders "} is
     * another tree than {@code "orders"}, so an instance configured with it would take every lock that instances
     * configured without the blank hold, each side alone in its tree. The start fails naming the value instead.
     */
    @Test
    void aNamespaceWithWhitespaceAroundItFailsTheStartNamingItWhileAPlainOneIsUsedAsGiven() throws IOException {
        Properties file = new Properties();
        file.load(new StringReader("fencing.zookeeper.namespace=orders \n"));
        assertThat(file.getProperty("fencing.zookeeper.namespace")).isEqualTo("orders ");

        for (String namespace : new String[] {"orders ", "orders\t", " orders", "   "}) {
            zookeeper
                    .withInitializer(context -> context.getEnvironment()
                            .getPropertySources()
                            .addFirst(new MapPropertySource(
                                    "application.properties", Map.of("fencing.zookeeper.namespace", namespace))))
                    .run(context -> assertThat(context)
                            .as("fencing.zookeeper.namespace='%s'", namespace)
                            .getFailure()
                            .rootCause()
                            .hasMessageContaining("fencing.zookeeper.namespace '" + namespace + "' has whitespace"));
        }
        zookeeper.withPropertyValues("fencing.zookeeper.namespace=orders").run(context -> assertThat(
                        context.getBean(CuratorFramework.class).getNamespace())
                .isEqualTo("orders"));
    }

    @Test
    void aBadPauseToleranceOrSequenceWrapMarginFailsTheStartNamingThePropertyAndTheValue() {
        zookeeper.withPropertyValues("fencing.locks.pause-tolerance=5ms").run(context -> assertThat(context)
                .getFailure()
                .hasStackTraceContaining(
                        "fencing.locks.pause-tolerance: pauseTolerance must be at least 20 ms, got PT0.005S"));
        zookeeper.withPropertyValues("fencing.locks.sequence-wrap-margin=-1").run(context -> assertThat(context)
                .getFailure()
                .hasStackTraceContaining("fencing.locks.sequence-wrap-margin: sequenceWrapMargin must be between 0")
                .hasStackTraceContaining("got -1"));
    }

    // ---- @FencedLocked methods

    @Test
    void lockedMethodsAreProxiedWhenThereAreLocks() {
        zookeeper.withUserConfiguration(LockedBean.class).run(context -> {
            assertThat(context).hasBean("fencedLockedAdvisor");
            assertThat(AopUtils.isAopProxy(context.getBean(Locked.class))).isTrue();
        });
    }

    @Test
    void withoutLocksALockedMethodFailsTheStartNamingItAndWhatIsMissing() {
        runner.withUserConfiguration(LockedBean.class).run(context -> assertThat(context)
                .getFailure()
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("@FencedLocked method " + Locked.class.getName() + ".")
                .hasMessageContaining("the application has no FencedLocks bean")
                .hasMessageContaining("fencing.zookeeper.connect-string")
                .hasMessageContaining("fencing.locked.enabled=false"));
    }

    @Test
    void aFencedLocksBeanInAParentContextLocksTheChildsMethods() {
        try (AnnotationConfigApplicationContext parent = new AnnotationConfigApplicationContext(OwnLocks.class)) {
            runner.withParent(parent)
                    .withUserConfiguration(LockedBean.class)
                    .run(context -> assertThat(context).hasNotFailed().hasSingleBean(Locked.class));
        }
    }

    @Test
    void aMisspelledConnectStringWithALockedMethodFailsTheStart() {
        runner.withUserConfiguration(LockedBean.class)
                .withPropertyValues("fencing.zookeeper.conect-string=" + NOWHERE)
                .run(context -> assertThat(context)
                        .getFailure()
                        .isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("the application has no FencedLocks bean"));
    }

    @Test
    void zookeeperEnabledFalseWithALockedMethodFailsTheStart() {
        zookeeper
                .withUserConfiguration(LockedBean.class)
                .withPropertyValues("fencing.zookeeper.enabled=false")
                .run(context -> assertThat(context)
                        .getFailure()
                        .isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("@FencedLocked method " + Locked.class.getName() + ".")
                        .hasMessageContaining("the application has no FencedLocks bean"));
    }

    @Test
    void twoCuratorClientsAndNoPrimaryWithALockedMethodFailTheStart() {
        zookeeper.withUserConfiguration(TwoCurators.class, LockedBean.class).run(context -> assertThat(context)
                .getFailure()
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("@FencedLocked method " + Locked.class.getName() + ".")
                .hasMessageContaining("no FencedLocks bean"));
    }

    @Test
    void withoutLocksAndWithoutLockedMethodsTheApplicationStarts() {
        runner.run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(FencedLocks.class));
    }

    @Test
    void aCallWithoutLocksIsRefusedNamingTheMethodInsteadOfRunningUnlocked() {
        ProxyFactory factory = new ProxyFactory(new Locked());
        factory.setProxyTargetClass(true);
        factory.addAdvice(
                new FencedLockedInterceptor(new DefaultListableBeanFactory().getBeanProvider(LockService.class)));
        Locked proxy = (Locked) factory.getProxy();
        assertThatThrownBy(() -> proxy.write("A-1", 0))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(
                        "@FencedLocked method " + Locked.class.getName() + ".write cannot run under its lock")
                .hasMessageContaining("the application has no FencedLocks bean");
    }

    @Test
    void lockedEnabledFalseLeavesMethodsUnlockedEvenWithoutLocks() {
        runner.withUserConfiguration(LockedBean.class)
                .withPropertyValues("fencing.locked.enabled=false")
                .run(context -> {
                    assertThat(context).hasNotFailed().doesNotHaveBean("fencedLockedAdvisor");
                    Locked locked = context.getBean(Locked.class);
                    assertThat(AopUtils.isAopProxy(locked)).isFalse();
                    assertThat(locked.write("A-1", 0)).isZero(); // ran, unlocked, with the caller's token
                });
    }

    /**
     * {@code on}, {@code yes} and {@code 1} are what Spring's conversion (and the binding of {@code FencingProperties})
     * reads as {@code true}: such a switch must not leave the methods running without any lock, on every instance at
     * once.
     */
    @Test
    void aLockedEnabledValueSpringReadsAsTrueKeepsTheMethodsLocked() {
        for (String on : List.of("on", "yes", "1")) {
            zookeeper
                    .withUserConfiguration(LockedBean.class)
                    .withPropertyValues("fencing.locked.enabled=" + on)
                    .run(context -> {
                        assertThat(context).hasNotFailed();
                        assertThat(AopUtils.isAopProxy(context.getBean(Locked.class)))
                                .as("fencing.locked.enabled=%s: is the locked method proxied", on)
                                .isTrue();
                    });
        }
    }

    /** A value that is no boolean fails the start naming it, with or without a lock service. */
    @Test
    void aLockedEnabledValueThatIsNoBooleanFailsTheStartNamingIt() {
        for (ApplicationContextRunner r : List.of(runner, zookeeper)) {
            r.withUserConfiguration(LockedBean.class)
                    .withPropertyValues("fencing.locked.enabled=ture")
                    .run(context -> assertThat(context)
                            .getFailure()
                            .hasStackTraceContaining("fencing.locked.enabled")
                            .hasStackTraceContaining("ture"));
        }
    }

    @Test
    void theApplicationsOwnInterceptorWinsAndIsTheAdvisorsAdvice() {
        zookeeper.withUserConfiguration(OwnInterceptor.class).run(context -> {
            assertThat(context).hasSingleBean(FencedLockedInterceptor.class);
            FencedLockedInterceptor own = context.getBean("ownInterceptor", FencedLockedInterceptor.class);
            assertThat(context.getBean(FencedLockedInterceptor.class)).isSameAs(own);
            assertThat(context.getBean("fencedLockedAdvisor", Advisor.class).getAdvice())
                    .isSameAs(own);
        });
    }

    @Test
    void theApplicationsOwnAdvisorNamedFencedLockedAdvisorWins() {
        zookeeper.withUserConfiguration(OwnAdvisor.class).run(context -> assertThat(
                        context.getBean("fencedLockedAdvisor"))
                .isSameAs(OwnAdvisor.ADVISOR));
    }

    @Test
    void aCallerPassingItsOwnTokenIsRefusedBeforeAnythingIsLocked() {
        zookeeper.withUserConfiguration(LockedBean.class).run(context -> {
            Locked locked = context.getBean(Locked.class);
            assertThatThrownBy(() -> locked.write("A-1", 7))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("pass 0 for its @FenceToken parameter")
                    .hasMessageContaining("got 7");
            assertThatThrownBy(() -> locked.withLease("A-1", new FakeLease()))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("pass null for its Lease parameter");
        });
    }

    @Test
    void aMisdeclaredLockedMethodIsRefusedNamingIt() {
        zookeeper.withUserConfiguration(LockedBean.class).run(context -> {
            Locked locked = context.getBean(Locked.class);
            assertThatThrownBy(() -> locked.tokenAsText("A-1", null))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("@FenceToken parameter token of " + Locked.class.getName() + ".tokenAsText")
                    .hasMessageContaining("must be a long, not java.lang.String");
            assertThatThrownBy(() -> locked.badTimeout())
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("timeout 'soon' is not a duration");
            assertThatThrownBy(() -> locked.twoTokenSources())
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("name at most one tokenSource")
                    .hasMessageContaining("[SEQUENCE, ZXID]");
            assertThatThrownBy(() -> locked.skippedWithACount())
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining(
                            "@FencedLocked(skipIfLocked = true) on " + Locked.class.getName() + ".skippedWithACount")
                    .hasMessageContaining("must return void or Optional, not int");
            assertThatThrownBy(() -> locked.write(null, 0))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("'#sku' in lock path template '/locks/#{#sku}' gave null");
        });
    }

    // ---- ShedLock's LockProvider and the election participant

    @Test
    void withShedLockOnTheClassPathThereIsAFencedLockProviderUnderThePathPrefix() {
        zookeeper.withPropertyValues("fencing.shedlock.path-prefix=/locks/jobs").run(context -> {
            assertThat(context).hasSingleBean(FencedLockProvider.class);
            assertThat(context.getBean(FencedLockProvider.class).path("report")).isEqualTo("/locks/jobs/report");
        });
    }

    @Test
    void aShedLockNameWithWhitespaceAroundItIsRefusedNamingItRatherThanLockedAsAnotherLock() {
        // @SchedulerLock(name = "${report.lock}") with "report.lock=report " in a properties file: ZooKeeper and etcd
        // keep the blank, so the instances configured without it would run the job at the same time
        zookeeper.withPropertyValues("fencing.shedlock.path-prefix=/locks/jobs").run(context -> {
            FencedLockProvider provider = context.getBean(FencedLockProvider.class);
            for (String name : new String[] {"report ", " report", "report\t"}) {
                assertThatThrownBy(() -> provider.path(name))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("ShedLock lock name '" + name + "' has whitespace at its start or end");
                assertThatThrownBy(() -> provider.lock(new net.javacrumbs.shedlock.core.LockConfiguration(
                                java.time.Instant.now(),
                                name,
                                java.time.Duration.ofMinutes(1),
                                java.time.Duration.ZERO)))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("ShedLock lock name '" + name + "'");
            }
            assertThat(provider.path("report")).isEqualTo("/locks/jobs/report");
        });
    }

    @Test
    void theApplicationsLockProviderWinsAndWithoutShedLockOrWhenSwitchedOffThereIsNone() {
        net.javacrumbs.shedlock.core.LockProvider own = configuration -> java.util.Optional.empty();
        zookeeper
                .withBean(net.javacrumbs.shedlock.core.LockProvider.class, () -> own)
                .run(context -> assertThat(context.getBean(net.javacrumbs.shedlock.core.LockProvider.class))
                        .isSameAs(own));
        zookeeper
                .withClassLoader(new FilteredClassLoader(net.javacrumbs.shedlock.core.LockProvider.class))
                .run(context -> assertThat(context).doesNotHaveBean(FencedLockProvider.class));
        zookeeper.withPropertyValues("fencing.shedlock.enabled=false").run(context -> assertThat(context)
                .doesNotHaveBean(FencedLockProvider.class));
        runner.run(context -> assertThat(context).doesNotHaveBean(FencedLockProvider.class));
    }

    @Test
    void aBadShedLockPathPrefixFailsTheStartNamingTheProperty() {
        zookeeper
                .withPropertyValues("fencing.shedlock.path-prefix=locks/jobs/")
                .run(context ->
                        assertThat(context).getFailure().rootCause().hasMessageContaining("must start with '/'"));
        zookeeper
                .withPropertyValues("fencing.shedlock.path-prefix=locks/jobs/")
                .run(context -> assertThat(context).getFailure().hasMessageContaining("fencing.shedlock.path-prefix"));
    }

    /**
     * As with the namespace, a properties file keeps a path's trailing blanks, and ZooKeeper takes {@code
     * "/locks/jobs "} as another node than {@code "/locks/jobs"}: the instances configured with each would run the
     * same job, or lead the same election, at once. The start fails naming the property and the value.
     */
    @Test
    void aShedLockPathPrefixOrElectionPathWithWhitespaceAroundItFailsTheStartNamingIt() {
        for (String property : new String[] {"fencing.shedlock.path-prefix", "fencing.election.path"}) {
            for (String path : new String[] {"/locks/jobs ", " /locks/jobs", "/locks/jobs\t"}) {
                zookeeper
                        .withInitializer(context -> context.getEnvironment()
                                .getPropertySources()
                                .addFirst(new MapPropertySource("application.properties", Map.of(property, path))))
                        .run(context -> assertThat(context)
                                .as("%s='%s'", property, path)
                                .getFailure()
                                .hasStackTraceContaining(property)
                                .hasStackTraceContaining("'" + path + "' has whitespace at its start or end"));
            }
        }
        zookeeper
                .withPropertyValues(
                        "fencing.shedlock.path-prefix=/locks/jobs",
                        "fencing.election.path=/locks/jobs/leader",
                        "fencing.election.auto-startup=false")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    // the registry's prefix is the application's own, checked the same way
                    LockService locks = context.getBean(LockService.class);
                    assertThat(new FencedLockRegistry(locks, "/locks/orders")
                                    .obtain("a")
                                    .path())
                            .isEqualTo("/locks/orders/a");
                    assertThatThrownBy(() -> new FencedLockRegistry(locks, "/locks/orders "))
                            .isInstanceOf(IllegalArgumentException.class)
                            .hasMessageContaining("'/locks/orders ' has whitespace at its start or end");
                });
    }

    @Test
    void anElectionPathGivesAParticipantThatDoesNotJoinWhenAutoStartupIsOff() {
        zookeeper
                .withPropertyValues("fencing.election.path=/elections/x", "fencing.election.auto-startup=false")
                .run(context -> {
                    FencedElectionParticipant participant = context.getBean(FencedElectionParticipant.class);
                    assertThat(participant.path()).isEqualTo("/elections/x");
                    assertThat(participant.participantId()).startsWith("application-");
                    assertThat(participant.isRunning()).isFalse();
                });
        zookeeper.run(context -> assertThat(context).doesNotHaveBean(FencedElectionParticipant.class));
        zookeeper
                .withPropertyValues("fencing.election.path=/elections/x", "fencing.election.enabled=false")
                .run(context -> assertThat(context).doesNotHaveBean(FencedElectionParticipant.class));
    }

    /**
     * A path ZooKeeper refuses is refused when the participant is made, naming the property and the value, not only
     * when it joins: with auto-startup off that would be never.
     */
    @Test
    void aMalformedElectionPathFailsTheStartNamingThePropertyAndTheValue() {
        for (String path : new String[] {"/elections/ledger/", "elections/ledger", "/elections//ledger", "/"}) {
            zookeeper
                    .withPropertyValues("fencing.election.path=" + path, "fencing.election.auto-startup=false")
                    .run(context -> assertThat(context)
                            .as("fencing.election.path=%s", path)
                            .getFailure()
                            .hasStackTraceContaining("fencing.election.path '" + path + "' is not a lock path"));
        }
        zookeeper
                .withPropertyValues(
                        "fencing.election.path=/elections/led\u0001ger", "fencing.election.auto-startup=false")
                .run(context -> assertThat(context)
                        .getFailure()
                        .hasStackTraceContaining("fencing.election.path '/elections/led?ger' is not a lock path"));
    }

    @Test
    void anEmptyElectionPathOrParticipantIdFailsTheStartNamingTheProperty() {
        zookeeper.withPropertyValues("fencing.election.path= ").run(context -> assertThat(context)
                .getFailure()
                .hasMessageContaining("fencing.election.path is empty"));
        zookeeper
                .withPropertyValues("fencing.election.path=/elections/x", "fencing.election.participant-id= ")
                .run(context -> assertThat(context)
                        .getFailure()
                        .hasMessageContaining("fencing.election.participant-id is empty"));
    }

    // ---- Jdbi and FencedWriter

    @Test
    void aDataSourceGivesAJdbiAndAFencedWriter() {
        runner.withUserConfiguration(OneDataSource.class).run(context -> {
            assertThat(context).hasSingleBean(Jdbi.class).hasSingleBean(FencedWriter.class);
            assertThat(context.getBean(FencedWriter.class).policy()).isEqualTo(FencePolicy.STRICT);
        });
    }

    @Test
    void withoutADataSourceThereIsNoJdbiAndNoWriter() {
        runner.run(context -> assertThat(context).doesNotHaveBean(Jdbi.class).doesNotHaveBean(FencedWriter.class));
    }

    @Test
    void withTwoDataSourcesAndNoPrimaryTheStarterDoesNotGuess() {
        runner.withUserConfiguration(TwoDataSources.class)
                .run(context -> assertThat(context).doesNotHaveBean(Jdbi.class).doesNotHaveBean(FencedWriter.class));
    }

    @Test
    void theApplicationsJdbiWinsAndGetsTheWriter() {
        runner.withUserConfiguration(OneDataSource.class, OwnJdbi.class).run(context -> {
            assertThat(context).hasSingleBean(Jdbi.class).hasSingleBean(FencedWriter.class);
            assertThat(context.getBean(Jdbi.class)).isSameAs(context.getBean("ownJdbi"));
        });
    }

    @Test
    void theApplicationsFencedWriterWins() {
        runner.withUserConfiguration(OneDataSource.class, OwnWriter.class).run(context -> {
            assertThat(context).hasSingleBean(FencedWriter.class);
            assertThat(context.getBean(FencedWriter.class).policy()).isEqualTo(FencePolicy.MONOTONIC);
            assertThat(context.getBean(FencedWriter.class)).isSameAs(context.getBean("ownWriter"));
        });
    }

    @Test
    void jdbcEnabledFalseSwitchesJdbiAndWriterOff() {
        runner.withUserConfiguration(OneDataSource.class)
                .withPropertyValues("fencing.jdbc.enabled=false")
                .run(context -> assertThat(context).doesNotHaveBean(Jdbi.class).doesNotHaveBean(FencedWriter.class));
    }

    /** Every switch reads as the properties bind it: {@code on} is on, {@code off} is off, like true and false. */
    @Test
    void jdbcEnabledReadsOnAndOffAsItsPropertyBindsThem() {
        runner.withUserConfiguration(OneDataSource.class)
                .withPropertyValues("fencing.jdbc.enabled=on")
                .run(context -> assertThat(context).hasSingleBean(Jdbi.class).hasSingleBean(FencedWriter.class));
        runner.withUserConfiguration(OneDataSource.class)
                .withPropertyValues("fencing.jdbc.enabled=off")
                .run(context -> assertThat(context).doesNotHaveBean(Jdbi.class).doesNotHaveBean(FencedWriter.class));
        runner.withUserConfiguration(OneDataSource.class)
                .withPropertyValues("fencing.jdbc.enabled=maybe")
                .run(context -> assertThat(context)
                        .getFailure()
                        .hasStackTraceContaining("fencing.jdbc.enabled")
                        .hasStackTraceContaining("maybe"));
    }

    @Test
    void withoutJdbiOnTheClassPathThereIsNoWriter() {
        runner.withUserConfiguration(OneDataSource.class)
                .withClassLoader(new FilteredClassLoader(Jdbi.class))
                .run(context -> assertThat(context).doesNotHaveBean(FencedWriter.class));
    }

    @Test
    void thePolicyPropertyChoosesTheWritersPolicy() {
        runner.withUserConfiguration(OneDataSource.class)
                .withPropertyValues("fencing.jdbc.policy=monotonic")
                .run(context ->
                        assertThat(context.getBean(FencedWriter.class).policy()).isEqualTo(FencePolicy.MONOTONIC));
    }

    // ---- Micrometer

    @Test
    void withMicrometerTheWriterConsumersAndLeasesCountOnTheApplicationsRegistry() {
        zookeeper.withUserConfiguration(OneDataSource.class).run(context -> assertThat(context)
                .hasBean("fencingWriterMeters")
                .hasBean("fencingLeaseMeters"));
    }

    @Test
    void metricsEnabledFalseSwitchesTheMetersOff() {
        zookeeper
                .withUserConfiguration(OneDataSource.class)
                .withPropertyValues("fencing.metrics.enabled=false")
                .run(context -> assertThat(context)
                        .doesNotHaveBean("fencingWriterMeters")
                        .doesNotHaveBean("fencingLeaseMeters"));
    }

    @Test
    void withoutMicrometerOnTheClassPathThereAreNoMetersAndTheRestStays() {
        zookeeper
                .withUserConfiguration(OneDataSource.class)
                .withClassLoader(new FilteredClassLoader(MeterRegistry.class))
                .run(context -> assertThat(context)
                        .doesNotHaveBean("fencingWriterMeters")
                        .doesNotHaveBean("fencingLeaseMeters")
                        .hasSingleBean(FencedWriter.class)
                        .hasSingleBean(FencedLocks.class));
    }

    @Test
    void theApplicationsOwnMetersWin() {
        zookeeper.withUserConfiguration(OneDataSource.class, OwnMeters.class).run(context -> {
            assertThat(context.getBean("fencingLeaseMeters")).isSameAs(OwnMeters.LEASES);
            assertThat(context.getBean("fencingWriterMeters")).isSameAs(OwnMeters.WRITER);
            assertThat(context).getBeans(LeaseMeters.class).isEmpty();
        });
    }

    @Test
    void withDeclaredConsumersAndMicrometerTheConsumersCount() {
        oneConsumer.run(context -> assertThat(context).hasBean("fencingConsumerMeters"));
    }

    @Test
    void withoutDeclaredConsumersThereAreNoConsumerMeters() {
        runner.run(context -> assertThat(context).doesNotHaveBean("fencingConsumerMeters"));
    }

    @Test
    void metricsEnabledFalseSwitchesTheConsumerMetersOff() {
        oneConsumer.withPropertyValues("fencing.metrics.enabled=false").run(context -> assertThat(context)
                .hasSingleBean(DeclaredConsumers.class)
                .doesNotHaveBean("fencingConsumerMeters"));
    }

    @Test
    void withoutMicrometerOnTheClassPathThereAreNoConsumerMetersAndTheConsumersStay() {
        oneConsumer
                .withClassLoader(new FilteredClassLoader(MeterRegistry.class))
                .run(context -> assertThat(context)
                        .hasSingleBean(DeclaredConsumers.class)
                        .doesNotHaveBean("fencingConsumerMeters"));
    }

    @Test
    void theApplicationsOwnConsumerMetersWin() {
        oneConsumer.withUserConfiguration(OwnConsumerMeters.class).run(context -> assertThat(
                        context.getBean("fencingConsumerMeters"))
                .isSameAs(OwnConsumerMeters.METERS));
    }

    // ---- Flyway

    @Test
    void theToolkitsMigrationsAreAddedToSpringBootsFlywayOnce() {
        runner.run(context -> {
            FlywayConfigurationCustomizer customizer =
                    context.getBean("fencingFlywayLocation", FlywayConfigurationCustomizer.class);
            FluentConfiguration configuration = Flyway.configure().locations("classpath:db/migration");
            customizer.customize(configuration);
            customizer.customize(configuration);
            assertThat(Arrays.stream(configuration.getLocations()).map(Location::getDescriptor))
                    .containsExactly("classpath:db/migration", "classpath:dev/fencing/db/migration");
        });
    }

    @Test
    void flywayEnabledFalseLeavesSpringBootsFlywayAlone() {
        runner.withPropertyValues("fencing.flyway.enabled=false")
                .run(context -> assertThat(context).doesNotHaveBean("fencingFlywayLocation"));
    }

    @Test
    void withoutFlywayOnTheClassPathThereIsNoCustomizer() {
        runner.withClassLoader(new FilteredClassLoader(Flyway.class))
                .run(context -> assertThat(context).doesNotHaveBean("fencingFlywayLocation"));
    }

    @Test
    void withoutTheDbModuleThereIsNoCustomizer() {
        runner.withClassLoader(new FilteredClassLoader(
                        new ClassPathResource("dev/fencing/db/migration/V1__fencing_schema.sql")))
                .run(context -> assertThat(context).doesNotHaveBean("fencingFlywayLocation"));
    }

    @Test
    void theApplicationsOwnFencingFlywayLocationWins() {
        runner.withUserConfiguration(OwnFlywayLocation.class)
                .run(context ->
                        assertThat(context.getBean("fencingFlywayLocation")).isSameAs(OwnFlywayLocation.CUSTOMIZER));
    }

    // ---- consumers declared by properties

    private final ApplicationContextRunner oneConsumer = runner.withUserConfiguration(Handlers.class)
            .withPropertyValues(
                    "fencing.kafka.properties.bootstrap.servers=" + NOWHERE,
                    "fencing.kafka.consumers.log.topics=events",
                    "fencing.kafka.consumers.log.handler=plainHandler",
                    "fencing.kafka.consumers.log.watermark-store=in-memory",
                    "fencing.kafka.consumers.log.auto-startup=false");

    @Test
    void aDeclaredConsumerIsALifecycleBeanOfTheContext() {
        oneConsumer.run(context -> {
            assertThat(context).hasSingleBean(DeclaredConsumers.class);
            assertThat(context.getBean(DeclaredConsumers.class).states()).containsEntry("log", "stopped");
        });
    }

    @Test
    void withoutDeclaredConsumersThereIsNoLifecycleBean() {
        runner.run(context -> assertThat(context).doesNotHaveBean(DeclaredConsumers.class));
    }

    @Test
    void kafkaEnabledFalseSwitchesDeclaredConsumersOff() {
        oneConsumer.withPropertyValues("fencing.kafka.enabled=false").run(context -> assertThat(context)
                .doesNotHaveBean(DeclaredConsumers.class));
    }

    @Test
    void withoutFencedKafkaOnTheClassPathThereAreNoConsumers() {
        oneConsumer
                .withClassLoader(new FilteredClassLoader(FencedConsumer.class))
                .run(context -> assertThat(context).doesNotHaveBean(DeclaredConsumers.class));
    }

    @Test
    void aConsumerWhoseHandlerBeanIsMissingFailsTheStartNamingConsumerAndBean() {
        oneConsumer
                .withPropertyValues(
                        "fencing.kafka.consumers.log.handler=noSuchHandler",
                        "fencing.kafka.consumers.log.auto-startup=true")
                .run(context -> assertThat(context)
                        .getFailure()
                        .hasStackTraceContaining(
                                "fencing.kafka.consumers.log.handler names the bean 'noSuchHandler', and the"
                                        + " application has no bean of that name"));
    }

    @Test
    void aTransactionalHandlerWithAnInMemoryStoreIsRefused() {
        oneConsumer
                .withPropertyValues(
                        "fencing.kafka.consumers.log.handler=transactionalHandler",
                        "fencing.kafka.consumers.log.auto-startup=true")
                .run(context -> assertThat(context)
                        .getFailure()
                        .hasStackTraceContaining("watermark-store must be postgres, not IN_MEMORY"));
    }

    @Test
    void aPostgresStoreWithoutADatabaseIsRefusedSayingWhatToDo() {
        oneConsumer
                .withPropertyValues(
                        "fencing.kafka.consumers.log.watermark-store=postgres",
                        "fencing.kafka.consumers.log.auto-startup=true")
                .run(context -> assertThat(context)
                        .getFailure()
                        .hasStackTraceContaining("watermark-store postgres needs a Jdbi bean"));
    }

    @Test
    void aConsumerSettingTheConsumerRefusesFailsTheStart() {
        oneConsumer
                .withPropertyValues(
                        "fencing.kafka.consumers.log.properties.enable.auto.commit=true",
                        "fencing.kafka.consumers.log.auto-startup=true")
                .run(context -> assertThat(context)
                        .getFailure()
                        .hasStackTraceContaining("fencing.kafka.consumers.log: enable.auto.commit"));
    }

    @Test
    void aSharedGroupIdFailsTheStartNamingTheProperty() {
        oneConsumer
                .withPropertyValues(
                        "fencing.kafka.properties.group.id=everyone", "fencing.kafka.consumers.log.group-id=log-v2")
                .run(context -> assertThat(context)
                        .getFailure()
                        .hasStackTraceContaining("fencing.kafka.properties.group.id is set to 'everyone'"));
    }

    @Test
    void theApplicationsOwnDeclaredConsumersWin() {
        oneConsumer.withUserConfiguration(OwnConsumers.class).run(context -> {
            assertThat(context).hasSingleBean(DeclaredConsumers.class);
            assertThat(context.getBean(DeclaredConsumers.class)).isSameAs(context.getBean("ownConsumers"));
        });
    }

    // ---- health

    @Test
    void healthIsDownWhileZooKeeperIsUnreachable() {
        zookeeper.run(context -> {
            assertThat(context).hasSingleBean(FencingHealthIndicator.class);
            assertThat(context.getBean(FencingHealthIndicator.class).health().getStatus())
                    .isEqualTo(Status.DOWN);
        });
    }

    @Test
    void withNeitherClientNorConsumersThereIsNoHealthIndicator() {
        runner.run(context -> assertThat(context).doesNotHaveBean(FencingHealthIndicator.class));
    }

    @Test
    void healthCanBeSwitchedOffLikeAnyHealthIndicator() {
        zookeeper.withPropertyValues("management.health.fencing.enabled=false").run(context -> assertThat(context)
                .doesNotHaveBean(FencingHealthIndicator.class));
    }

    @Test
    void theApplicationsOwnFencingHealthIndicatorWins() {
        zookeeper.withUserConfiguration(OwnHealth.class).run(context -> assertThat(context)
                .doesNotHaveBean(FencingHealthIndicator.class)
                .hasBean("fencingHealthIndicator"));
    }

    // ---- the application's beans

    @Configuration(proxyBeanMethods = false)
    static class OwnCurator {
        @Bean(destroyMethod = "close")
        CuratorFramework ownCurator() {
            CuratorFramework client = CuratorFrameworkFactory.newClient(NOWHERE, new RetryOneTime(100));
            client.start();
            return client;
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class TwoCurators extends OwnCurator {
        @Bean(destroyMethod = "close")
        CuratorFramework secondCurator() {
            return ownCurator();
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnLocks extends OwnCurator {
        @Bean
        FencedLocks ownLocks(CuratorFramework client) {
            return FencedLocks.builder(client).build();
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class LockedBean {
        @Bean
        Locked locked() {
            return new Locked();
        }
    }

    static class Locked {
        @FencedLocked("/locks/#{#sku}")
        public long write(String sku, @FenceToken long token) {
            return token;
        }

        @FencedLocked(value = "/locks/#{#sku}", tokenSource = dev.fencing.lock.zookeeper.TokenSource.ZXID)
        public long zxid(String sku, @FenceToken long token) {
            return token;
        }

        @FencedLocked("/locks/#{#sku}")
        public String withLease(String sku, dev.fencing.lock.Lease lease) {
            return lease.path();
        }

        @FencedLocked("/locks/#{#sku}")
        public String tokenAsText(String sku, @FenceToken String token) {
            return token;
        }

        @FencedLocked(value = "/locks/x", timeout = "soon")
        public void badTimeout() {}

        @FencedLocked(
                value = "/locks/x",
                tokenSource = {
                    dev.fencing.lock.zookeeper.TokenSource.SEQUENCE,
                    dev.fencing.lock.zookeeper.TokenSource.ZXID
                })
        public void twoTokenSources() {}

        @FencedLocked(value = "/locks/x", skipIfLocked = true)
        public int skippedWithACount() {
            return 1;
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnAdvisor {
        static final Advisor ADVISOR = new org.springframework.aop.support.DefaultPointcutAdvisor(
                org.springframework.aop.Pointcut.TRUE, (org.aopalliance.intercept.MethodInterceptor) i -> i.proceed());

        @Bean
        Advisor fencedLockedAdvisor() {
            return ADVISOR;
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class OneDataSource {
        @Bean
        DataSource dataSource() {
            PGSimpleDataSource ds = new PGSimpleDataSource();
            ds.setURL("jdbc:postgresql://" + NOWHERE + "/nobody");
            return ds;
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class TwoDataSources extends OneDataSource {
        @Bean
        DataSource secondDataSource() {
            return dataSource();
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnJdbi {
        @Bean
        Jdbi ownJdbi(DataSource dataSource) {
            return Jdbi.create(dataSource);
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnWriter {
        @Bean
        FencedWriter ownWriter(Jdbi jdbi) {
            return FencedWriter.builder(jdbi).policy(FencePolicy.MONOTONIC).build();
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnInterceptor {
        @Bean
        FencedLockedInterceptor ownInterceptor(ObjectProvider<LockService> locks) {
            return new FencedLockedInterceptor(locks);
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnMeters {
        static final FencedLockListener LEASES = new FencedLockListener() {};
        static final FencedWriterCustomizer WRITER = builder -> {};

        @Bean
        FencedLockListener fencingLeaseMeters() {
            return LEASES;
        }

        @Bean
        FencedWriterCustomizer fencingWriterMeters() {
            return WRITER;
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnConsumerMeters {
        static final FencedConsumerCustomizer METERS = (name, builder) -> {};

        @Bean
        FencedConsumerCustomizer fencingConsumerMeters() {
            return METERS;
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnConsumers {
        @Bean
        DeclaredConsumers ownConsumers(BeanFactory beans) {
            return new DeclaredConsumers(new FencingProperties.Kafka(), beans, () -> null, List.of());
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnFlywayLocation {
        static final FlywayConfigurationCustomizer CUSTOMIZER = configuration -> {};

        @Bean
        FlywayConfigurationCustomizer fencingFlywayLocation() {
            return CUSTOMIZER;
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class Handlers {
        @Bean
        RecordHandler<String, String> plainHandler() {
            return (record, token) -> {};
        }

        @Bean
        TransactionalRecordHandler<Handle, String, String> transactionalHandler() {
            return (handle, record, token) -> {};
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnHealth {
        @Bean
        org.springframework.boot.health.contributor.HealthIndicator fencingHealthIndicator() {
            return () -> org.springframework.boot.health.contributor.Health.up().build();
        }
    }

    /** A lease a caller could try to pass in; the interceptor refuses it before locking. */
    static final class FakeLease implements dev.fencing.lock.Lease {
        @Override
        public long token() {
            return 99;
        }

        @Override
        public String path() {
            return "/locks/A-1";
        }

        @Override
        public boolean isValid() {
            return true;
        }

        @Override
        public void ensureValid() {}

        @Override
        public boolean verify() {
            return true;
        }

        @Override
        public dev.fencing.lock.LeaseLoss lossCause() {
            return null;
        }

        @Override
        public void close() {}
    }
}
