package dev.fencing.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.spring.autoconfigure.FencingLockedMethodsAutoConfiguration;
import dev.fencing.spring.autoconfigure.FencingShedLockAutoConfiguration;
import dev.fencing.spring.autoconfigure.FencingZooKeeperAutoConfiguration;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.SimpleDriverDataSource;

/**
 * LeasesCheckedAtCommit says it rolls back a transaction begun under a ShedLock job's lease once the
 * lease is known lost, and FencedLockProvider holds the job's lock until the running transaction ends (commit check
 * included) either way; but the listener is added only by the locked methods' auto-configuration, so switching
 * {@code @FencedLocked} methods off ({@code fencing.locked.enabled=false}) silently drops the commit check of ShedLock
 * jobs' own transactions.
 */
class ShedLockCommitCheckTest {
    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    FencingZooKeeperAutoConfiguration.class,
                    FencingLockedMethodsAutoConfiguration.class,
                    FencingShedLockAutoConfiguration.class))
            .withPropertyValues("fencing.zookeeper.connect-string=127.0.0.1:1", "fencing.zookeeper.startup-timeout=0")
            .withUserConfiguration(Transactions.class);

    @Test
    void aShedLockJobsTransactionIsCheckedAtCommitAlsoWithLockedMethodsSwitchedOff() {
        for (String enabled : new String[] {"true", "false"}) {
            runner.withPropertyValues("fencing.locked.enabled=" + enabled).run(context -> {
                assertThat(context).hasNotFailed().hasSingleBean(FencedLockProvider.class);
                assertThat(context.getBean(DataSourceTransactionManager.class).getTransactionExecutionListeners())
                        .as(
                                "fencing.locked.enabled=%s: listeners of the transaction manager ShedLock jobs use",
                                enabled)
                        .anyMatch(l -> l.getClass().getSimpleName().equals("LeasesCheckedAtCommit"));
            });
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class Transactions {
        @Bean
        DataSourceTransactionManager transactionManager() {
            return new DataSourceTransactionManager(new SimpleDriverDataSource());
        }
    }
}
