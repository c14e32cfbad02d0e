package dev.fencing.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.lock.etcd.EtcdLocks;
import dev.fencing.lock.zookeeper.FencedLocks;
import dev.fencing.spring.FencingAutoConfigurationTest.Locked;
import dev.fencing.spring.FencingAutoConfigurationTest.LockedBean;
import dev.fencing.spring.autoconfigure.FencingElectionAutoConfiguration;
import dev.fencing.spring.autoconfigure.FencingEtcdAutoConfiguration;
import dev.fencing.spring.autoconfigure.FencingHealthAutoConfiguration;
import dev.fencing.spring.autoconfigure.FencingLockServiceAutoConfiguration;
import dev.fencing.spring.autoconfigure.FencingLockedMethodsAutoConfiguration;
import dev.fencing.spring.autoconfigure.FencingShedLockAutoConfiguration;
import dev.fencing.spring.autoconfigure.FencingZooKeeperAutoConfiguration;
import dev.fencing.spring.internal.EtcdLockService;
import dev.fencing.spring.internal.FencingHealthIndicator;
import dev.fencing.spring.internal.FencingStartupException;
import io.etcd.jetcd.Client;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryOneTime;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.aop.support.AopUtils;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The etcd side of the auto-configuration and the choice between lock services, without servers: the jetcd client
 * points at a port where nothing listens (it connects lazily; the start-up check is off unless tested). The locks
 * themselves on a real etcd are {@code FencingEtcdStarterIT}'s.
 */
class FencingEtcdAutoConfigurationTest {
    private static final String NOWHERE = "http://127.0.0.1:1";
    private static final String ZK_NOWHERE = "127.0.0.1:1";

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    FencingLockServiceAutoConfiguration.class,
                    FencingZooKeeperAutoConfiguration.class,
                    FencingEtcdAutoConfiguration.class,
                    FencingLockedMethodsAutoConfiguration.class,
                    FencingHealthAutoConfiguration.class,
                    FencingShedLockAutoConfiguration.class,
                    FencingElectionAutoConfiguration.class));

    private final ApplicationContextRunner etcd =
            runner.withPropertyValues("fencing.etcd.endpoints=" + NOWHERE, "fencing.etcd.startup-timeout=0");

    @Test
    void endpointsGiveAClientEtcdLocksAndTheLockServiceOfLockedMethods() {
        etcd.withUserConfiguration(LockedBean.class).run(context -> {
            assertThat(context)
                    .hasNotFailed()
                    .hasSingleBean(Client.class)
                    .hasSingleBean(EtcdLocks.class)
                    .hasSingleBean(LockService.class)
                    .doesNotHaveBean(CuratorFramework.class)
                    .doesNotHaveBean(FencedLocks.class);
            assertThat(context.getBean(LockService.class).name()).isEqualTo("etcd");
            assertThat(AopUtils.isAopProxy(context.getBean(Locked.class))).isTrue();
        });
    }

    @Test
    void theApplicationsOwnClientIsUsedAndLeftOpenWhenTheContextCloses() {
        AtomicInteger closes = new AtomicInteger();
        Client own = counting(Client.builder().endpoints(NOWHERE).build(), closes);
        try {
            runner.withBean("ownClient", Client.class, () -> own, d -> d.setDestroyMethodName(""))
                    .run(context -> {
                        assertThat(context).hasNotFailed().hasSingleBean(Client.class);
                        assertThat(context).hasSingleBean(EtcdLocks.class).hasSingleBean(LockService.class);
                    });
            assertThat(closes).hasValue(0);
        } finally {
            own.close();
        }
    }

    @Test
    void bothServicesConfiguredWithoutAChoiceFailTheStartNamingBothProperties() {
        etcd.withPropertyValues("fencing.zookeeper.connect-string=" + ZK_NOWHERE, "fencing.zookeeper.startup-timeout=0")
                .run(context -> assertThat(context)
                        .getFailure()
                        .isInstanceOf(FencingStartupException.class)
                        .hasMessageContaining("fencing.zookeeper.connect-string (" + ZK_NOWHERE + ")")
                        .hasMessageContaining("fencing.etcd.endpoints ([" + NOWHERE + "])")
                        .hasMessageContaining("fencing.lock-service=zookeeper or fencing.lock-service=etcd"));
    }

    @Test
    void aLockServiceThatIsNeitherFailsTheStartNamingTheValue() {
        etcd.withPropertyValues("fencing.lock-service=consul").run(context -> assertThat(context)
                .getFailure()
                .isInstanceOf(FencingStartupException.class)
                .hasMessageContaining("fencing.lock-service is 'consul', which is no lock service")
                .hasMessageContaining("zookeeper or etcd"));
    }

    @Test
    void aLockServiceWhoseModuleIsMissingFailsTheStartNamingTheValueAndTheDependencyWhereItStartedWithoutLocks() {
        ApplicationContextRunner withoutFencingEtcd = etcd.withPropertyValues(
                        "fencing.lock-service=etcd",
                        "fencing.zookeeper.connect-string=" + ZK_NOWHERE,
                        "fencing.zookeeper.startup-timeout=0")
                .withClassLoader(new FilteredClassLoader("dev.fencing.lock.etcd"));

        withoutFencingEtcd.run(context -> assertThat(context)
                .getFailure()
                .isInstanceOf(FencingStartupException.class)
                .hasMessageContaining("fencing.lock-service is 'etcd', but fencing-etcd is not on the class path")
                .hasMessageContaining("missing dev.fencing.lock.etcd.EtcdLocks")
                .hasMessageContaining("Add the dependency dev.fencing:fencing-etcd"));
        // without the check, the same application starts with no lock service at all
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(
                        FencingZooKeeperAutoConfiguration.class,
                        FencingEtcdAutoConfiguration.class,
                        FencingLockedMethodsAutoConfiguration.class,
                        FencingElectionAutoConfiguration.class))
                .withPropertyValues(
                        "fencing.lock-service=etcd",
                        "fencing.etcd.endpoints=" + NOWHERE,
                        "fencing.zookeeper.connect-string=" + ZK_NOWHERE,
                        "fencing.zookeeper.startup-timeout=0")
                .withClassLoader(new FilteredClassLoader("dev.fencing.lock.etcd"))
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(LockService.class));

        runner.withPropertyValues("fencing.lock-service=zookeeper", "fencing.etcd.endpoints=" + NOWHERE)
                .withClassLoader(new FilteredClassLoader("org.apache.curator", "org.apache.zookeeper"))
                .run(context -> assertThat(context)
                        .getFailure()
                        .isInstanceOf(FencingStartupException.class)
                        .hasMessageContaining(
                                "fencing.lock-service is 'zookeeper', but fencing-zookeeper is not on the class path")
                        .hasMessageContaining("Add the dependency dev.fencing:fencing-zookeeper"));
    }

    /**
     * etcd's settings set while the locks are on ZooKeeper are ignored, as Boot ignores an unused technology's, with
     * one WARN naming them (never their values: one may be a password).
     */
    @Test
    @ExtendWith(OutputCaptureExtension.class)
    void etcdSettingsWhileTheLocksAreOnZooKeeperAreNamedInAWarning(CapturedOutput output) {
        runner.withPropertyValues(
                        "fencing.lock-service=zookeeper",
                        "fencing.zookeeper.connect-string=" + ZK_NOWHERE,
                        "fencing.zookeeper.startup-timeout=0",
                        "fencing.etcd.endpoints=" + NOWHERE,
                        "fencing.etcd.lease-ttl=5s",
                        "fencing.etcd.password=etcd-secret")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context.getBean(LockService.class).name()).isEqualTo("zookeeper");
                });
        assertThat(output.getAll())
                .contains("fencing.etcd.endpoints, fencing.etcd.lease-ttl, fencing.etcd.password are set, but the"
                        + " lock service is zookeeper: they are ignored")
                .doesNotContain("etcd-secret");
        int before = output.getAll().length();
        runner.withPropertyValues(
                        "fencing.zookeeper.connect-string=" + ZK_NOWHERE, "fencing.zookeeper.startup-timeout=0")
                .run(context -> assertThat(context).hasNotFailed());
        assertThat(output.getAll().substring(before)).doesNotContain("fencing.etcd.");
    }

    @Test
    void aLockServiceWhoseSwitchIsOffFailsTheStartNamingTheSwitch() {
        etcd.withPropertyValues("fencing.lock-service=etcd", "fencing.etcd.enabled=false")
                .run(context -> assertThat(context)
                        .getFailure()
                        .isInstanceOf(FencingStartupException.class)
                        .hasMessageContaining("fencing.lock-service is 'etcd', but fencing.etcd.enabled is false"));
        runner.withPropertyValues(
                        "fencing.lock-service=zookeeper",
                        "fencing.zookeeper.enabled=false",
                        "fencing.etcd.endpoints=" + NOWHERE)
                .run(context -> assertThat(context)
                        .getFailure()
                        .isInstanceOf(FencingStartupException.class)
                        .hasMessageContaining(
                                "fencing.lock-service is 'zookeeper', but fencing.zookeeper.enabled is false"));
    }

    @Test
    void aMisspelledLockServiceFailsTheStartNamingTheValueWhicheverModulesArePresent() {
        runner.withPropertyValues("fencing.lock-service=etdc")
                .withClassLoader(new FilteredClassLoader("dev.fencing.lock.etcd", "io.etcd", "org.apache.curator"))
                .run(context -> assertThat(context)
                        .getFailure()
                        .isInstanceOf(FencingStartupException.class)
                        .hasMessageContaining("fencing.lock-service is 'etdc', which is no lock service"));
    }

    @Test
    void timeoutsTooLargeForTheClientsFailTheStartNamingPropertyAndValue() {
        // 25 days: more milliseconds than an int holds, which jetcd's connect timeout and Curator's take
        etcd.withPropertyValues("fencing.etcd.connect-timeout=25d").run(context -> assertThat(context)
                .getFailure()
                .hasStackTraceContaining("fencing.etcd.connect-timeout must be a positive duration, got PT600H")
                .hasStackTraceContaining("at most 2147483647 ms"));
        // beyond what Duration.toMillis() can give
        etcd.withPropertyValues("fencing.etcd.startup-timeout=9223372036854775807s")
                .run(context -> assertThat(context)
                        .getFailure()
                        .hasStackTraceContaining("fencing.etcd.startup-timeout must be a duration >= 0")
                        .hasStackTraceContaining("got PT2562047788015215H30M7S"));
        runner.withPropertyValues(
                        "fencing.zookeeper.connect-string=" + ZK_NOWHERE,
                        "fencing.zookeeper.startup-timeout=9223372036854775807s")
                .run(context -> assertThat(context)
                        .getFailure()
                        .hasStackTraceContaining("fencing.zookeeper.startup-timeout must be a duration >= 0")
                        .hasStackTraceContaining("got PT2562047788015215H30M7S"));
        runner.withPropertyValues(
                        "fencing.zookeeper.connect-string=" + ZK_NOWHERE,
                        "fencing.zookeeper.startup-timeout=0",
                        "fencing.zookeeper.session-timeout=25d")
                .run(context -> assertThat(context)
                        .getFailure()
                        .hasStackTraceContaining(
                                "fencing.zookeeper.session-timeout must be a positive duration, got" + " PT600H"));
    }

    @Test
    void theChosenServiceIsTheOnlyOneConfigured() {
        ApplicationContextRunner both = etcd.withPropertyValues(
                "fencing.zookeeper.connect-string=" + ZK_NOWHERE, "fencing.zookeeper.startup-timeout=0");
        both.withPropertyValues("fencing.lock-service=etcd").run(context -> {
            assertThat(context).hasNotFailed().hasSingleBean(EtcdLocks.class).doesNotHaveBean(CuratorFramework.class);
            assertThat(context.getBean(LockService.class).name()).isEqualTo("etcd");
        });
        both.withPropertyValues("fencing.lock-service=ZooKeeper").run(context -> {
            assertThat(context).hasNotFailed().hasSingleBean(FencedLocks.class).doesNotHaveBean(Client.class);
            assertThat(context.getBean(LockService.class).name()).isEqualTo("zookeeper");
        });
    }

    @Test
    void anOwnCuratorClientBesideEtcdEndpointsFailsTheStartNamingBothLockServices() {
        etcd.withUserConfiguration(OwnCurator.class).run(context -> assertThat(context)
                .getFailure()
                .isInstanceOf(FencingStartupException.class)
                .hasMessageContaining("the application has 2 lock services and none is @Primary")
                .hasMessageContaining("(zookeeper)")
                .hasMessageContaining("(etcd)")
                .hasMessageContaining("fencing.lock-service"));
    }

    @Test
    void badEtcdSettingsFailTheStartNamingTheProperty() {
        etcd.withPropertyValues("fencing.etcd.lease-ttl=1500ms").run(context -> assertThat(context)
                .getFailure()
                .rootCause()
                .hasMessageContaining("leaseTtl must be at least 2 s"));
        etcd.withPropertyValues("fencing.etcd.lease-ttl=1500ms")
                .run(context -> assertThat(context).getFailure().hasStackTraceContaining("fencing.etcd.lease-ttl"));
        etcd.withPropertyValues("fencing.etcd.prefix=/locks").run(context -> assertThat(context)
                .getFailure()
                .hasStackTraceContaining("fencing.etcd.prefix: prefix '/locks' must not start or end with '/'"));
        etcd.withPropertyValues("fencing.etcd.lease-ttl=5s", "fencing.etcd.pause-tolerance=5s")
                .run(context -> assertThat(context)
                        .getFailure()
                        .hasStackTraceContaining("fencing.etcd.pause-tolerance and lease-ttl")
                        .hasStackTraceContaining("must be below leaseTtl"));
        etcd.withPropertyValues("fencing.etcd.user=app")
                .run(context ->
                        assertThat(context).getFailure().hasStackTraceContaining("fencing.etcd.password is missing"));
        runner.withPropertyValues("fencing.etcd.endpoints=not a url", "fencing.etcd.startup-timeout=0")
                .run(context -> assertThat(context)
                        .getFailure()
                        .hasStackTraceContaining("fencing.etcd.endpoints [not a url] is not a list of URLs"));
    }

    @Test
    void zooKeeperLockSettingsOnEtcdFailTheStartNamingThePropertyInsteadOfBeingIgnored() {
        etcd.withPropertyValues("fencing.locks.pause-tolerance=500ms").run(context -> assertThat(context)
                .getFailure()
                .hasStackTraceContaining("fencing.locks.pause-tolerance is set to 500ms, a ZooKeeper setting, but"
                        + " the lock service is etcd")
                .hasStackTraceContaining("fencing.etcd.pause-tolerance"));
        etcd.withPropertyValues("fencing.locks.sequence-wrap-margin=1000").run(context -> assertThat(context)
                .getFailure()
                .hasStackTraceContaining("fencing.locks.sequence-wrap-margin is set to 1000, a ZooKeeper setting"));
        etcd.withPropertyValues("fencing.locks.token-source=zxid").run(context -> assertThat(context)
                .getFailure()
                .hasStackTraceContaining("fencing.locks.token-source is set to zxid, a ZooKeeper setting"));
        // on ZooKeeper the same settings are the locks' own
        runner.withPropertyValues(
                        "fencing.zookeeper.connect-string=" + ZK_NOWHERE,
                        "fencing.zookeeper.startup-timeout=0",
                        "fencing.locks.sequence-wrap-margin=1000",
                        "fencing.locks.token-source=zxid")
                .run(context -> assertThat(context).hasNotFailed().hasSingleBean(FencedLocks.class));
    }

    @Test
    void noMemberAnsweringWithinTheStartupTimeoutFailsTheStartNamingTheEndpoints() {
        runner.withPropertyValues("fencing.etcd.endpoints=" + NOWHERE, "fencing.etcd.startup-timeout=300ms")
                .run(context -> assertThat(context)
                        .getFailure()
                        .hasStackTraceContaining("no etcd member at [" + NOWHERE + "] (fencing.etcd.endpoints)")
                        .hasStackTraceContaining("fencing.etcd.startup-timeout"));
    }

    @Test
    void withoutCuratorOnTheClassPathTheEtcdPathStillRunsLockedMethods() {
        etcd.withClassLoader(new FilteredClassLoader("org.apache.curator", "org.apache.zookeeper"))
                .withBean(LockedJob.class)
                .run(context -> {
                    assertThat(context).hasNotFailed().hasSingleBean(EtcdLocks.class);
                    assertThat(context.getBean(LockService.class)).isInstanceOf(EtcdLockService.class);
                    assertThat(AopUtils.isAopProxy(context.getBean(LockedJob.class)))
                            .isTrue();
                    assertThat(context).doesNotHaveBean("fencingCuratorFramework");
                });
    }

    @Test
    void withoutJetcdOnTheClassPathTheEtcdPropertiesMakeNothing() {
        etcd.withClassLoader(new FilteredClassLoader(Client.class))
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(LockService.class));
    }

    @Test
    void onEtcdTheHealthIndicatorReportsTheClientAndIsDownWhileNoMemberAnswers() {
        etcd.run(context -> {
            assertThat(context).hasNotFailed().hasSingleBean(FencingHealthIndicator.class);
            Health health = context.getBean(FencingHealthIndicator.class).health();
            assertThat(health.getStatus()).isEqualTo(Status.DOWN);
            assertThat(health.getDetails())
                    .containsEntry("etcd", "not connected")
                    .containsEntry("etcdEndpoints", List.of(NOWHERE))
                    .containsKey("etcdError")
                    .doesNotContainKey("zookeeper");
        });
    }

    @Test
    void onEtcdWithoutCuratorOnTheClassPathTheHealthIndicatorIsThere() {
        etcd.withClassLoader(new FilteredClassLoader("org.apache.curator", "org.apache.zookeeper"))
                .run(context -> assertThat(context).hasNotFailed().hasSingleBean(FencingHealthIndicator.class));
    }

    @Test
    void onEtcdWithoutActuatorThereIsNoHealthIndicator() {
        etcd.withClassLoader(new FilteredClassLoader(HealthIndicator.class)).run(context -> assertThat(context)
                .hasNotFailed()
                .hasSingleBean(EtcdLocks.class)
                .doesNotHaveBean(FencingHealthIndicator.class));
    }

    @Test
    void theApplicationsOwnEtcdClientIsReportedWithoutTheConfiguredEndpoints() {
        Client own = Client.builder().endpoints(NOWHERE).build();
        try {
            runner.withBean("ownClient", Client.class, () -> own, d -> d.setDestroyMethodName(""))
                    .withPropertyValues("fencing.etcd.endpoints=http://configured-but-not-used:2379")
                    .run(context -> assertThat(context.getBean(FencingHealthIndicator.class)
                                    .health()
                                    .getDetails())
                            .containsEntry("etcd", "not connected")
                            .doesNotContainKey("etcdEndpoints"));
        } finally {
            own.close();
        }
    }

    @Test
    void anEtcdClientOfTheApplicationsOwnIsNotReportedWhenTheLocksAreOnZooKeeper() {
        Client own = Client.builder().endpoints(NOWHERE).build();
        try {
            ApplicationContextRunner ownClient = runner.withBean(
                            "ownClient", Client.class, () -> own, d -> d.setDestroyMethodName(""))
                    .withPropertyValues(
                            "fencing.zookeeper.connect-string=" + ZK_NOWHERE, "fencing.zookeeper.startup-timeout=0");
            ownClient.withPropertyValues("fencing.lock-service=zookeeper").run(context -> {
                assertThat(context).hasNotFailed().hasSingleBean(FencedLocks.class);
                assertThat(context.getBean(FencingHealthIndicator.class)
                                .health()
                                .getDetails())
                        .containsKey("zookeeper")
                        .doesNotContainKey("etcd");
            });
            // the counterfactual: with the locks on etcd, the same client is theirs and is reported
            ownClient.withPropertyValues("fencing.lock-service=etcd").run(context -> {
                assertThat(context).hasNotFailed().hasSingleBean(EtcdLocks.class);
                assertThat(context.getBean(FencingHealthIndicator.class)
                                .health()
                                .getDetails())
                        .containsEntry("etcd", "not connected");
            });
        } finally {
            own.close();
        }
    }

    @Test
    void aCuratorClientOfTheApplicationsOwnIsNotReportedWhenTheLocksAreOnEtcd() {
        CuratorFramework own = CuratorFrameworkFactory.newClient(ZK_NOWHERE, new RetryOneTime(1));
        try {
            etcd.withBean("ownCurator", CuratorFramework.class, () -> own, d -> d.setDestroyMethodName(""))
                    .withPropertyValues("fencing.lock-service=etcd")
                    .run(context -> {
                        assertThat(context).hasNotFailed().hasSingleBean(EtcdLocks.class);
                        assertThat(context.getBean(FencingHealthIndicator.class)
                                        .health()
                                        .getDetails())
                                .containsEntry("etcd", "not connected")
                                .doesNotContainKey("zookeeper");
                    });
        } finally {
            own.close();
        }
    }

    @Test
    void anEtcdClientOfTheApplicationsOwnIsNotReportedWhenEtcdIsSwitchedOff() {
        Client own = Client.builder().endpoints(NOWHERE).build();
        try {
            ApplicationContextRunner ownClient =
                    runner.withBean("ownClient", Client.class, () -> own, d -> d.setDestroyMethodName(""));
            ownClient.withPropertyValues("fencing.etcd.enabled=false").run(context -> assertThat(context)
                    .hasNotFailed()
                    .doesNotHaveBean(EtcdLocks.class)
                    .doesNotHaveBean(FencingHealthIndicator.class));
            ownClient
                    .withPropertyValues(
                            "fencing.etcd.enabled=false",
                            "fencing.zookeeper.connect-string=" + ZK_NOWHERE,
                            "fencing.zookeeper.startup-timeout=0")
                    .run(context -> assertThat(context.getBean(FencingHealthIndicator.class)
                                    .health()
                                    .getDetails())
                            .containsKey("zookeeper")
                            .doesNotContainKey("etcd"));
        } finally {
            own.close();
        }
    }

    @Test
    void aTokenSourceIsRefusedOnEtcdNamingTheMethod() {
        etcd.withUserConfiguration(LockedBean.class).run(context -> {
            Locked locked = context.getBean(Locked.class);
            assertThatThrownBy(() -> locked.zxid("A-1", 0))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("@FencedLocked on " + Locked.class.getName() + ".zxid")
                    .hasMessageContaining("names token source ZXID, a ZooKeeper setting, but the lock service is etcd");
        });
        etcd.withPropertyValues("fencing.election.path=/elections/ledger", "fencing.election.token-source=zxid")
                .run(context -> assertThat(context)
                        .getFailure()
                        .hasStackTraceContaining("fencing.election.token-source is ZXID, a ZooKeeper setting"));
    }

    /**
     * A path the etcd lock service refuses is refused when the participant is made, naming the property and the
     * value, not only when it joins: with auto-startup off that would be never.
     */
    @Test
    void aMalformedElectionPathFailsTheStartNamingThePropertyAndTheValue() {
        for (String path : new String[] {"/elections/ledger/", "elections/ledger", "/elections//ledger", "/"}) {
            etcd.withPropertyValues("fencing.election.path=" + path, "fencing.election.auto-startup=false")
                    .run(context -> assertThat(context)
                            .as("fencing.election.path=%s", path)
                            .getFailure()
                            .hasStackTraceContaining("fencing.election.path '" + path + "' is not a lock path"));
        }
        etcd.withPropertyValues("fencing.election.path=/elections/led\u0001ger", "fencing.election.auto-startup=false")
                .run(context -> assertThat(context)
                        .getFailure()
                        .hasStackTraceContaining("fencing.election.path '/elections/led?ger' is not a lock path"));
    }

    @Test
    void lockPathsBecomeOneEtcdLockNameEach() {
        assertThat(EtcdLockService.nameOf("/locks/inventory/A-1")).isEqualTo("locks%2Finventory%2FA-1");
        assertThat(EtcdLockService.nameOf("/a%2Fb")).isEqualTo("a%252Fb");
        assertThat(EtcdLockService.nameOf("/a/b")).isNotEqualTo(EtcdLockService.nameOf("/a%2Fb"));
        for (String bad : new String[] {"locks/a", "/", "/locks/", "/locks//a", "/ ", "/locks/ /a", "/\t"}) {
            assertThatThrownBy(() -> EtcdLockService.nameOf(bad))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("'" + bad + "'");
        }
    }

    /** The client, whose close() calls are counted before they are passed on. */
    private static Client counting(Client client, AtomicInteger closes) {
        return (Client) Proxy.newProxyInstance(
                Client.class.getClassLoader(), new Class<?>[] {Client.class}, (proxy, method, args) -> {
                    if (method.getName().equals("close")) {
                        closes.incrementAndGet();
                    }
                    try {
                        return method.invoke(client, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnCurator {
        @Bean(destroyMethod = "close")
        CuratorFramework ownCurator() {
            CuratorFramework client = CuratorFrameworkFactory.newClient(ZK_NOWHERE, new RetryOneTime(100));
            client.start();
            return client;
        }
    }
}
