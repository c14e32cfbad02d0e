package dev.fencing.lock.zookeeper.internal;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;

/** What the registry's tests share: one-shot test hooks, and started Curator clients. */
final class Hooks {
    private Hooks() {}

    @FunctionalInterface
    interface ThrowingRunnable {
        void run() throws Exception;
    }

    /** A hook that runs {@code action} the first time it is called, and does nothing after. */
    static Runnable once(ThrowingRunnable action) {
        AtomicBoolean done = new AtomicBoolean();
        return () -> {
            if (done.compareAndSet(false, true)) {
                try {
                    action.run();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }
        };
    }

    /** A started client with a 10 s session; the caller closes it. */
    static CuratorFramework startedClient(String connectString) {
        return startedClient(connectString, Duration.ofSeconds(10));
    }

    /** A started client that asks for {@code sessionTimeout}; the caller closes it. */
    static CuratorFramework startedClient(String connectString, Duration sessionTimeout) {
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connectString)
                .sessionTimeoutMs((int) sessionTimeout.toMillis())
                .connectionTimeoutMs(5_000)
                .retryPolicy(new ExponentialBackoffRetry(50, 10, 1_000))
                .build();
        client.start();
        return client;
    }
}
