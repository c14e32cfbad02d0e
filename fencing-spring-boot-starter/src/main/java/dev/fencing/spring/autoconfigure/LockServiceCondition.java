package dev.fencing.spring.autoconfigure;

import dev.fencing.spring.internal.FencingStartupException;
import java.util.List;
import java.util.Locale;
import java.util.function.Predicate;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.Condition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.core.env.Environment;
import org.springframework.core.type.AnnotatedTypeMetadata;
import org.springframework.util.ClassUtils;

/**
 * Whether a lock service's auto-configuration is the one {@code fencing.lock-service} picks, or, with none picked,
 * whether it is not ruled out. Fails the start, naming the values, when {@code fencing.lock-service} is neither
 * {@code zookeeper} nor {@code etcd} or names one whose module is missing ({@link Available}), and when it is unset
 * while both services are configured: two instances that
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
            return normalized(chosen).equals(service);
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

    /** The chosen service in lower case; fails the start when it names none. */
    private static String normalized(String chosen) {
        String value = chosen.trim().toLowerCase(Locale.ROOT);
        if (!value.equals(ZOOKEEPER) && !value.equals(ETCD)) {
            throw new FencingStartupException(
                    LOCK_SERVICE + " is '" + chosen + "', which is no lock service",
                    "Set " + LOCK_SERVICE + " to zookeeper or etcd, or remove it to use the one configured");
        }
        return value;
    }

    /**
     * Fails the start when {@code chosen} (the value of {@code fencing.lock-service}, or null) names no lock service,
     * or one whose module is missing ({@code present} tells whether a class is on the class path): that service's
     * auto-configuration would not even be considered, and the other's would step aside, so the application would
     * start with no lock service, no locked method locked and no election joined.
     */
    static void requireAvailable(String chosen, Predicate<String> present) {
        if (chosen == null) {
            return;
        }
        String value = normalized(chosen);
        boolean zooKeeper = value.equals(ZOOKEEPER);
        List<String> needed = zooKeeper
                ? List.of("dev.fencing.lock.zookeeper.FencedLocks", "org.apache.curator.framework.CuratorFramework")
                : List.of("dev.fencing.lock.etcd.EtcdLocks", "io.etcd.jetcd.Client");
        List<String> missing = needed.stream().filter(present.negate()).toList();
        if (!missing.isEmpty()) {
            String module = zooKeeper ? "fencing-zookeeper" : "fencing-etcd";
            throw new FencingStartupException(
                    LOCK_SERVICE + " is '" + chosen + "', but " + module + " is not on the class path (missing "
                            + String.join(", ", missing) + ")",
                    "Add the dependency dev.fencing:" + module + " (it brings " + (zooKeeper ? "Curator" : "jetcd")
                            + "), or set " + LOCK_SERVICE + " to the service whose module the application has");
        }
    }

    /**
     * Fails the start when {@code fencing.lock-service} names a service whose switch ({@code fencing.zookeeper.enabled}
     * or {@code fencing.etcd.enabled}) is false: its auto-configuration steps aside, the other's too, and the
     * application would start with no lock service.
     */
    static void requireEnabled(Environment env) {
        String chosen = env.getProperty(LOCK_SERVICE);
        if (chosen == null) {
            return;
        }
        String value = normalized(chosen);
        String enabled = value.equals(ZOOKEEPER) ? "fencing.zookeeper.enabled" : "fencing.etcd.enabled";
        if (!env.getProperty(enabled, Boolean.class, true)) {
            throw new FencingStartupException(
                    LOCK_SERVICE + " is '" + chosen + "', but " + enabled + " is false",
                    "Remove " + enabled + "=false, or set " + LOCK_SERVICE + " to the service the application uses");
        }
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

    /**
     * Always matches, after {@link #requireAvailable} and {@link #requireEnabled} passed: for an auto-configuration that every application with
     * the starter evaluates, whichever lock service modules it has.
     */
    static final class Available implements Condition {
        @Override
        public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
            requireAvailable(
                    context.getEnvironment().getProperty(LOCK_SERVICE),
                    name -> ClassUtils.isPresent(name, context.getClassLoader()));
            requireEnabled(context.getEnvironment());
            return true;
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
