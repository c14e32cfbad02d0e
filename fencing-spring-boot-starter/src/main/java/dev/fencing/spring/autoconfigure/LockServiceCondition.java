package dev.fencing.spring.autoconfigure;

import dev.fencing.spring.internal.FencingStartupException;
import java.util.List;
import java.util.Locale;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.Condition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.core.env.Environment;
import org.springframework.core.type.AnnotatedTypeMetadata;

/**
 * Whether a lock service's auto-configuration is the one {@code fencing.lock-service} picks, or, with none picked,
 * whether it is not ruled out. Fails the start, naming the values, when {@code fencing.lock-service} is neither
 * {@code zookeeper} nor {@code etcd}, and when it is unset while both services are configured: two instances that
 * picked different services would each hold "the" lock of a path at once.
 */
abstract class LockServiceCondition implements Condition {
    static final String LOCK_SERVICE = "fencing.lock-service";
    static final String ZOOKEEPER = "zookeeper";
    static final String ETCD = "etcd";

    private final String service;

    LockServiceCondition(String service) {
        this.service = service;
    }

    @Override
    public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
        Environment env = context.getEnvironment();
        return picks(
                service,
                env.getProperty(LOCK_SERVICE),
                zooKeeperConfigured(env) ? env.getProperty("fencing.zookeeper.connect-string") : null,
                etcdConfigured(env) ? endpoints(env) : List.of());
    }

    /**
     * The decision, without I/O: {@code zooKeeper} is the connect string when ZooKeeper is configured (else null),
     * {@code etcd} the endpoints when etcd is (else empty).
     */
    static boolean picks(String service, String chosen, String zooKeeper, List<String> etcd) {
        if (chosen != null) {
            String value = chosen.trim().toLowerCase(Locale.ROOT);
            if (!value.equals(ZOOKEEPER) && !value.equals(ETCD)) {
                throw new FencingStartupException(
                        LOCK_SERVICE + " is '" + chosen + "', which is no lock service",
                        "Set " + LOCK_SERVICE + " to zookeeper or etcd, or remove it to use the one configured");
            }
            return value.equals(service);
        }
        if (zooKeeper != null && !etcd.isEmpty()) {
            throw new FencingStartupException(
                    "both fencing.zookeeper.connect-string (" + zooKeeper + ") and fencing.etcd.endpoints (" + etcd
                            + ") are set, and " + LOCK_SERVICE + " does not say which service the locks are on",
                    "Set " + LOCK_SERVICE + "=zookeeper or " + LOCK_SERVICE + "=etcd (every instance of the service"
                            + " must lock on the same one), or remove the other service's property");
        }
        return true;
    }

    private static boolean zooKeeperConfigured(Environment env) {
        String connect = env.getProperty("fencing.zookeeper.connect-string");
        return connect != null && env.getProperty("fencing.zookeeper.enabled", Boolean.class, true);
    }

    private static boolean etcdConfigured(Environment env) {
        return env.getProperty("fencing.etcd.enabled", Boolean.class, true);
    }

    /** {@code fencing.etcd.endpoints} as Boot binds it: a comma-separated value or an indexed (YAML) list. */
    static List<String> endpoints(Environment env) {
        return Binder.get(env)
                .bind("fencing.etcd.endpoints", Bindable.listOf(String.class))
                .orElse(List.of());
    }

    static final class ZooKeeper extends LockServiceCondition {
        ZooKeeper() {
            super(ZOOKEEPER);
        }
    }

    static final class Etcd extends LockServiceCondition {
        Etcd() {
            super(ETCD);
        }
    }

    /** Whether {@code fencing.etcd.endpoints} names at least one endpoint. */
    static final class EtcdEndpoints implements Condition {
        @Override
        public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
            return !endpoints(context.getEnvironment()).isEmpty();
        }
    }
}
