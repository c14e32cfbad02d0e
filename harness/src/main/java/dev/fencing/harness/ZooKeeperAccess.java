package dev.fencing.harness;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryOneTime;

/**
 * What a run's coordinator asks of ZooKeeper itself, each on a short-lived client: whether it can be reached,
 * what session timeout it grants, and the removal of a run's lock nodes. Stateless and thread-safe.
 */
public final class ZooKeeperAccess {
    /** How long a server may take to answer before it counts as unreachable. */
    public static final int CONNECT_TIMEOUT_SECONDS = 10;

    /**
     * Where fencing-zookeeper keeps the history of every lock path it created ({@code /fencing-lock-history<path>}, see
     * docs/locks.md).
     */
    public static final String LOCK_HISTORY_ROOT = "/fencing-lock-history";

    private ZooKeeperAccess() {}

    /**
     * Connects asking for {@code requested} and returns what the server granted. By default a server clamps the
     * requested timeout to between 2 and 20 times its {@code tickTime}, and a pause that does not outlast the
     * granted timeout leaves a frozen holder its lock: the run would test nothing.
     *
     * @throws HarnessException if ZooKeeper cannot be reached within {@value #CONNECT_TIMEOUT_SECONDS} s
     */
    public static Duration grantedSessionTimeout(String connectString, Duration requested) {
        CuratorFramework probe = client(connectString, (int) requested.toMillis());
        try {
            probe.start();
            if (!probe.blockUntilConnected(CONNECT_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                throw new HarnessException(
                        "cannot reach ZooKeeper at " + connectString + " within " + CONNECT_TIMEOUT_SECONDS + " s");
            }
            return Duration.ofMillis(probe.getZookeeperClient().getZooKeeper().getSessionTimeout());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new HarnessException("interrupted while connecting to ZooKeeper at " + connectString, e);
        } catch (HarnessException e) {
            throw e;
        } catch (Exception e) { // Curator declares Exception
            throw new HarnessException("cannot read the session timeout ZooKeeper grants: " + e.getMessage(), e);
        } finally {
            probe.close();
        }
    }

    /**
     * Returns when ZooKeeper at {@code connectString} answers.
     *
     * @param flag the flag that named it, for the message
     * @throws HarnessException naming the flag and the address when it does not answer within {@value
     *     #CONNECT_TIMEOUT_SECONDS} s, or the connect string is malformed
     */
    public static void requireReachable(String connectString, String flag) {
        CuratorFramework probe = client(connectString, 0);
        try {
            probe.start();
            if (!probe.blockUntilConnected(CONNECT_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                throw new HarnessException("cannot reach ZooKeeper at " + connectString + " (" + flag + ") within "
                        + CONNECT_TIMEOUT_SECONDS + " s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new HarnessException("interrupted while connecting to ZooKeeper at " + connectString, e);
        } catch (IllegalArgumentException e) {
            throw new HarnessException(
                    "bad ZooKeeper connect string '" + connectString + "' (" + flag + "): " + e.getMessage(), e);
        } finally {
            probe.close();
        }
    }

    /**
     * Deletes the node {@code path} and everything under it (the lock nodes of one run), and the fencing-zookeeper's
     * history of those locks under {@value #LOCK_HISTORY_ROOT}{@code path}. Deleting a lock's history is safe only
     * because a run never uses its lock paths again (each run has fresh ones) and the tokens they granted live
     * only in that run's tables and topics.
     *
     * @throws HarnessException naming the path and the server when ZooKeeper refuses
     */
    public static void deleteLockTree(String connectString, String path) {
        CuratorFramework client = client(connectString, 0);
        try {
            client.start();
            for (String tree : List.of(path, LOCK_HISTORY_ROOT + path)) {
                if (client.checkExists().forPath(tree) != null) {
                    client.delete().deletingChildrenIfNeeded().forPath(tree);
                }
            }
        } catch (Exception e) { // Curator declares Exception
            throw new HarnessException("could not delete " + path + " on ZooKeeper at " + connectString, e);
        } finally {
            client.close();
        }
    }

    private static CuratorFramework client(String connectString, int sessionTimeoutMillis) {
        CuratorFrameworkFactory.Builder builder = CuratorFrameworkFactory.builder()
                .connectString(connectString)
                .connectionTimeoutMs(CONNECT_TIMEOUT_SECONDS * 1_000)
                .retryPolicy(new RetryOneTime(100));
        if (sessionTimeoutMillis > 0) {
            builder.sessionTimeoutMs(sessionTimeoutMillis);
        }
        return builder.build();
    }
}
