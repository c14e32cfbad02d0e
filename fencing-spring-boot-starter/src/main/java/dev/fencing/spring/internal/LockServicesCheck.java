package dev.fencing.spring.internal;

import dev.fencing.spring.LockService;
import java.util.Arrays;
import java.util.stream.Collectors;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.SmartInitializingSingleton;

/**
 * Fails the application's start when it has several {@link LockService} beans and none is {@code @Primary}: with
 * locks on ZooKeeper and on etcd (say, the application's own Curator client beside {@code fencing.etcd.endpoints}),
 * an instance that picked one and an instance that picked the other would both hold the lock of a path at once.
 */
public final class LockServicesCheck implements SmartInitializingSingleton {
    private final ListableBeanFactory beans;

    public LockServicesCheck(ListableBeanFactory beans) {
        this.beans = beans;
    }

    @Override
    public void afterSingletonsInstantiated() {
        String[] names = beans.getBeanNamesForType(LockService.class, true, false);
        if (names.length > 1 && beans.getBeanProvider(LockService.class).getIfUnique() == null) {
            throw new FencingStartupException(
                    "the application has " + names.length + " lock services and none is @Primary: "
                            + Arrays.stream(names)
                                    .map(n -> n + " ("
                                            + beans.getBean(n, LockService.class)
                                                    .name() + ")")
                                    .collect(Collectors.joining(", ")),
                    "Set fencing.lock-service=zookeeper or fencing.lock-service=etcd (every instance of the service"
                            + " must lock on the same one), or remove one service's client");
        }
    }
}
