package dev.fencing.spring.autoconfigure;

import dev.fencing.spring.FencedLockProvider;
import dev.fencing.spring.FencingProperties;
import dev.fencing.spring.LockService;
import net.javacrumbs.shedlock.core.LockProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;

/**
 * A ShedLock {@link LockProvider} on the application's {@link LockService}: {@code @SchedulerLock} jobs run
 * under ZooKeeper or etcd locks and read their token with {@link dev.fencing.spring.CurrentLease#token()}. Made when
 * ShedLock is on the class path, there is one lock service and the application has no {@link LockProvider}
 * of its own; the locks live under {@code fencing.shedlock.path-prefix}. Off with {@code
 * fencing.shedlock.enabled=false}. ShedLock's own {@code @EnableSchedulerLock} is still the application's to
 * declare.
 */
@AutoConfiguration(after = {FencingZooKeeperAutoConfiguration.class, FencingEtcdAutoConfiguration.class})
@ConditionalOnClass(LockProvider.class)
@ConditionalOnSwitch("fencing.shedlock.enabled")
@EnableConfigurationProperties(FencingProperties.class)
@Import(LeaseCommitCheckConfiguration.class) // a job's transaction is checked at commit, as a locked method's
public class FencingShedLockAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean(LockProvider.class)
    @ConditionalOnSingleCandidate(LockService.class)
    public FencedLockProvider fencedLockProvider(LockService locks, FencingProperties properties) {
        try {
            return new FencedLockProvider(locks, properties.getShedlock().getPathPrefix());
        } catch (IllegalArgumentException | NullPointerException e) {
            throw new IllegalStateException("fencing.shedlock.path-prefix: " + e.getMessage(), e);
        }
    }
}
