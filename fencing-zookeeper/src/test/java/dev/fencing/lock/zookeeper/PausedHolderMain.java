package dev.fencing.lock.zookeeper;

import dev.fencing.lock.FencedReadWriteLock;
import dev.fencing.lock.Lease;
import java.time.Duration;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * A lock holder in its own JVM, for {@link PausedHolderIT} to freeze with SIGSTOP. Prints {@code HELD
 * <token>}, then checks its lease the way a careful holder does between steps; prints {@code STEADY}
 * once the lease has stayed valid for {@link #STEADY} (longer than the pause tolerance of every test
 * that uses it, so a lease that turns invalid without a pause is caught before the test freezes this
 * JVM), and when it finds the lease gone prints {@code LOST <cause>}, then {@code NODE_OWNED
 * <true|false>} (whether a lock node of this client's current session still exists, as ZooKeeper sees
 * it), then {@code VERIFY <true|false>}. Arguments: connect string, lock path, session timeout in ms,
 * and optionally the pause tolerance in ms, or {@code write} to hold the write lock of a {@link
 * FencedReadWriteLock} instead of an exclusive lock.
 */
public final class PausedHolderMain {
    static final Duration STEADY = Duration.ofSeconds(1);

    private PausedHolderMain() {}

    public static void main(String[] args) throws Exception {
        String connect = args[0];
        String path = args[1];
        int sessionTimeoutMs = Integer.parseInt(args[2]);
        boolean write = args.length > 3 && args[3].equals("write");
        Duration pauseTolerance = args.length > 3 && !write ? Duration.ofMillis(Long.parseLong(args[3])) : null;
        try (CuratorFramework client = CuratorFrameworkFactory.builder()
                        .connectString(connect)
                        .sessionTimeoutMs(sessionTimeoutMs)
                        .connectionTimeoutMs(sessionTimeoutMs)
                        .retryPolicy(new ExponentialBackoffRetry(50, 3, 500))
                        .build();
                FencedLocks locks = startedLocks(client, pauseTolerance);
                Lease lease = write
                        ? locks.readWriteLock(path).writeLock().acquire()
                        : locks.lock(path).acquire()) {
            System.out.println("HELD " + lease.token());
            System.out.flush();
            long checks = 0;
            long heldSince = System.nanoTime();
            boolean steady = false;
            while (lease.isValid()) {
                checks++;
                if (!steady && System.nanoTime() - heldSince > STEADY.toNanos()) {
                    steady = true;
                    System.out.println("STEADY");
                    System.out.flush();
                }
                Thread.onSpinWait();
                Thread.sleep(5); // the holder's "work" between checks; the freeze comes from outside
            }
            System.out.println("LOST " + lease.lossCause() + " after " + checks + " checks");
            System.out.println("NODE_OWNED " + ownsALockNode(client, path));
            System.out.println("VERIFY " + lease.verify());
            System.out.flush();
        }
    }

    private static boolean ownsALockNode(CuratorFramework client, String path) throws Exception {
        long session = client.getZookeeperClient().getZooKeeper().getSessionId();
        for (String child : client.getChildren().forPath(path)) {
            var stat = client.checkExists().forPath(path + "/" + child);
            if ((child.contains("lock-") || child.contains("__WRIT__"))
                    && stat != null
                    && stat.getEphemeralOwner() == session) {
                return true;
            }
        }
        return false;
    }

    private static FencedLocks startedLocks(CuratorFramework client, Duration pauseTolerance)
            throws InterruptedException {
        client.start();
        if (!client.blockUntilConnected(
                (int) Duration.ofSeconds(20).toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException(
                    "could not connect to " + client.getZookeeperClient().getCurrentConnectionString());
        }
        FencedLocks.Builder builder = FencedLocks.builder(client);
        if (pauseTolerance != null) {
            builder.pauseTolerance(pauseTolerance);
        }
        return builder.build();
    }
}
