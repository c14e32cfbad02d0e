package dev.fencing.lock.zookeeper.internal;

import dev.fencing.lock.FencedLockListener;
import dev.fencing.lock.Lease;
import dev.fencing.lock.zookeeper.FencedLocks;
import dev.fencing.lock.zookeeper.TokenSource;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * An acquirer in its own JVM that stops between Curator's grant and the registration of its hold,
 * for {@code PausedHolderIT} to freeze there with SIGSTOP. Prints {@code AT_HOOK} when Curator has
 * granted, then waits for a line on stdin (sent after SIGCONT) and for the pause detector to have run
 * since, so that the detector, with no hold to invalidate, is what must have noticed the pause. Then
 * prints {@code GRANTED <token> <valid> <loss cause>}. Arguments: connect string, lock path, session
 * timeout in ms, pause tolerance in ms.
 */
public final class FrozenBeforeRegistrationMain {
    private FrozenBeforeRegistrationMain() {}

    public static void main(String[] args) throws Exception {
        String connect = args[0];
        String path = args[1];
        int sessionTimeoutMs = Integer.parseInt(args[2]);
        Duration pauseTolerance = Duration.ofMillis(Long.parseLong(args[3]));
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try (CuratorFramework client = CuratorFrameworkFactory.builder()
                        .connectString(connect)
                        .sessionTimeoutMs(sessionTimeoutMs)
                        .connectionTimeoutMs(sessionTimeoutMs)
                        .retryPolicy(new ExponentialBackoffRetry(50, 3, 500))
                        .build();
                LockRegistry registry = started(client, pauseTolerance)) {
            AtomicBoolean once = new AtomicBoolean();
            registry.beforeRegistering(() -> {
                if (once.compareAndSet(false, true)) {
                    System.out.println("AT_HOOK");
                    System.out.flush();
                    try {
                        stdin.readLine();
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                    while (registry.pauses().pausedTooLong()) {
                        Thread.onSpinWait(); // until the detector has ticked since the pause
                    }
                }
            });
            try (Lease lease = registry.lock(path, TokenSource.SEQUENCE).acquire()) {
                System.out.println("GRANTED " + lease.token() + " " + lease.isValid() + " " + lease.lossCause());
                System.out.flush();
            }
        }
    }

    private static LockRegistry started(CuratorFramework client, Duration pauseTolerance) throws InterruptedException {
        client.start();
        if (!client.blockUntilConnected(20, TimeUnit.SECONDS)) {
            throw new IllegalStateException(
                    "could not connect to " + client.getZookeeperClient().getCurrentConnectionString());
        }
        return new LockRegistry(
                client, null, pauseTolerance, new FencedLockListener() {}, FencedLocks.DEFAULT_SEQUENCE_WRAP_MARGIN);
    }
}
