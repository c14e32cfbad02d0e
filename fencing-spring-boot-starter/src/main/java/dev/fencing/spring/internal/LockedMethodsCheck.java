package dev.fencing.spring.internal;

import dev.fencing.spring.FencedLocked;
import dev.fencing.spring.LockService;
import java.lang.reflect.Method;
import java.util.Map;
import java.util.Optional;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ClassUtils;

/**
 * Fails the application's start when a bean has a {@link FencedLocked} method and there is no single
 * {@link LockService} (ZooKeeper's or etcd's locks) to lock it with: such a method would otherwise run on every instance at once,
 * unlocked, with nothing to say so. The interceptor refuses such a call too ({@link #noLocks}), for beans
 * made after the start.
 */
public final class LockedMethodsCheck implements SmartInitializingSingleton {
    private final ListableBeanFactory beans;

    public LockedMethodsCheck(ListableBeanFactory beans) {
        this.beans = beans;
    }

    @Override
    public void afterSingletonsInstantiated() {
        // look it up the way the interceptor will: one bean, or a @Primary among several, in this context
        // or an ancestor's
        if (beans.getBeanProvider(LockService.class).getIfUnique() != null) {
            return;
        }
        int locks = beans.getBeanNamesForType(LockService.class, true, false).length;
        for (String name : beans.getBeanDefinitionNames()) {
            Optional<Method> locked = firstLockedMethod(beans.getType(name, false));
            if (locked.isPresent()) {
                throw noLocks(LockedMethod.describe(locked.get()) + " (bean '" + name + "')", locks);
            }
        }
    }

    private static Optional<Method> firstLockedMethod(Class<?> type) {
        if (type == null) {
            return Optional.empty();
        }
        Map<Method, FencedLocked> found = MethodIntrospector.selectMethods(
                ClassUtils.getUserClass(type), (MethodIntrospector.MetadataLookup<FencedLocked>)
                        method -> AnnotatedElementUtils.findMergedAnnotation(method, FencedLocked.class));
        return found.keySet().stream().findFirst();
    }

    /**
     * The failure of a {@link FencedLocked} method that has no lock to run under: names it, says what is
     * missing and how to fix it.
     */
    static FencingStartupException noLocks(String method, int locks) {
        String missing = locks == 0
                ? "the application has no FencedLocks bean (ZooKeeper) and no EtcdLocks bean (etcd)"
                : "the application has " + locks + " lock services (ZooKeeper's and etcd's locks) and none is @Primary";
        return new FencingStartupException(
                "@FencedLocked method " + method + " cannot run under its lock: " + missing
                        + ", so it would run unlocked on every instance at once",
                "The starter makes FencedLocks when fencing.zookeeper.connect-string is set (check its spelling)"
                        + " and fencing.zookeeper.enabled is not false, or on the application's CuratorFramework bean"
                        + " if it has exactly one (mark one @Primary if it has several); or define a FencedLocks bean."
                        + " On etcd it makes EtcdLocks when fencing.etcd.endpoints is set (with fencing-etcd on the class"
                        + " path), or on the application's jetcd Client bean. With both, set fencing.lock-service."
                        + " To run @FencedLocked methods without any lock on purpose, set fencing.locked.enabled=false");
    }
}
