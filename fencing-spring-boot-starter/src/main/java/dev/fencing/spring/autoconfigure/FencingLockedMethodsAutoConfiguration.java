package dev.fencing.spring.autoconfigure;

import dev.fencing.lock.FencedLock;
import dev.fencing.spring.FencedLocked;
import dev.fencing.spring.LockService;
import dev.fencing.spring.internal.FencedLockedInterceptor;
import dev.fencing.spring.internal.LockedMethodsCheck;
import dev.fencing.spring.internal.SkippedCallMeters;
import dev.fencing.spring.internal.SkippedCalls;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.aop.Advisor;
import org.springframework.aop.config.AopConfigUtils;
import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.ImportBeanDefinitionRegistrar;
import org.springframework.context.annotation.Role;
import org.springframework.core.Ordered;
import org.springframework.core.type.AnnotationMetadata;

/**
 * Runs {@link FencedLocked} methods under their lock, taken from the application's single (or primary)
 * {@link LockService}, on the application's ZooKeeper {@code FencedLocks} or etcd {@code EtcdLocks}, its own or
 * the starter's. The advisor's order is {@link #ADVISOR_ORDER}, a higher
 * precedence than the transaction advisor's default, so a {@code @Transactional @FencedLocked} method takes
 * the lock first and commits before releasing it. An application's own bean named {@code
 * fencedLockedAdvisor} replaces the advisor.
 *
 * <p>Fails closed: when a bean has a {@link FencedLocked} method and there is no lock service to lock it with
 * (no or a misspelled {@code fencing.zookeeper.connect-string} or {@code fencing.etcd.endpoints}, {@code
 * fencing.zookeeper.enabled=false}, two Curator clients and none primary), the application does not start,
 * with a message naming the method ({@link LockedMethodsCheck}); a call made anyway is refused the same way.
 *
 * <p>Off with {@code fencing.locked.enabled=false}: then nothing looks at {@link FencedLocked}, and the
 * annotated methods run <b>without any lock</b>, on every instance at once; their lease and token parameters
 * keep what the caller passed ({@code null} and {@code 0}, a token every fenced resource refuses).
 */
@AutoConfiguration(after = {FencingZooKeeperAutoConfiguration.class, FencingEtcdAutoConfiguration.class})
@ConditionalOnClass({FencedLock.class, Advisor.class})
@ConditionalOnSwitch("fencing.locked.enabled")
@Import({FencingLockedMethodsAutoConfiguration.AutoProxying.class, LeaseCommitCheckConfiguration.class})
public class FencingLockedMethodsAutoConfiguration {
    /** Order of the advisor: just ahead of Spring's transaction advisor ({@code Ordered.LOWEST_PRECEDENCE}). */
    public static final int ADVISOR_ORDER = Ordered.LOWEST_PRECEDENCE - 100;

    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    @ConditionalOnMissingBean
    public static FencedLockedInterceptor fencedLockedInterceptor(
            ObjectProvider<LockService> locks, ObjectProvider<SkippedCalls> skips) {
        return new FencedLockedInterceptor(locks, skips);
    }

    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    @ConditionalOnMissingBean(name = "fencedLockedAdvisor")
    public static Advisor fencedLockedAdvisor(ObjectProvider<FencedLockedInterceptor> interceptor) {
        DefaultPointcutAdvisor advisor = new DefaultPointcutAdvisor(
                new AnnotationMatchingPointcut(null, FencedLocked.class, true), interceptor.getObject());
        advisor.setOrder(ADVISOR_ORDER);
        return advisor;
    }

    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    public static LockedMethodsCheck fencedLockedMethodsCheck(ListableBeanFactory beans) {
        return new LockedMethodsCheck(beans);
    }

    /** Counts skipped calls of {@code skipIfLocked} methods on the application's meter registry, if it has one. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(MeterRegistry.class)
    @ConditionalOnSwitch("fencing.metrics.enabled")
    static class SkippedCallMetricsConfiguration {
        @Bean
        @ConditionalOnMissingBean(name = "fencingSkippedCallMeters")
        SkippedCallMeters fencingSkippedCallMeters(ObjectProvider<MeterRegistry> registry) {
            return new SkippedCallMeters(registry);
        }
    }

    /**
     * Makes sure an auto-proxy creator exists (Spring Boot's AOP auto-configuration registers one, but it
     * can be switched off), the way {@code @EnableTransactionManagement} does.
     */
    static class AutoProxying implements ImportBeanDefinitionRegistrar {
        @Override
        public void registerBeanDefinitions(AnnotationMetadata metadata, BeanDefinitionRegistry registry) {
            AopConfigUtils.registerAutoProxyCreatorIfNecessary(registry);
        }
    }
}
