package dev.fencing.demo;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryOneTime;

/**
 * The session timeout ZooKeeper actually grants. By default a server clamps the requested timeout to between 2
 * and 20 times its {@code tickTime} (an ensemble with the default 2 s tickTime grants at least 4 s when 2 s is
 * asked), and a pause that does not outlast the granted timeout leaves the frozen worker its lock: the run
 * would test nothing. Stateless and thread-safe.
 */
final class SessionTimeouts {
    private SessionTimeouts() {}

    /**
     * Connects with {@code requested} and returns what the server granted.
     *
     * @throws DemoException if ZooKeeper cannot be reached within 10 s
     */
    static Duration granted(String connectString, Duration requested) {
        CuratorFramework probe = CuratorFrameworkFactory.builder()
                .connectString(connectString)
                .sessionTimeoutMs((int) requested.toMillis())
                .connectionTimeoutMs(10_000)
                .retryPolicy(new RetryOneTime(100))
                .build();
        try {
            probe.start();
            if (!probe.blockUntilConnected(10, TimeUnit.SECONDS)) {
                throw new DemoException("cannot reach ZooKeeper at " + connectString + " within 10 s");
            }
            return Duration.ofMillis(probe.getZookeeperClient().getZooKeeper().getSessionTimeout());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DemoException("interrupted while connecting to ZooKeeper at " + connectString, e);
        } catch (Exception e) {
            if (e instanceof DemoException demo) {
                throw demo;
            }
            throw new DemoException("cannot read the session timeout ZooKeeper grants: " + e.getMessage(), e);
        } finally {
            probe.close();
        }
    }

    /**
     * @throws DemoUsageException naming both numbers when {@code pause} does not exceed {@code granted}
     */
    static void requirePauseLonger(Duration pause, Duration requested, Duration granted) {
        if (pause.compareTo(granted) <= 0) {
            throw new DemoUsageException("ZooKeeper granted a session timeout of " + Durations.format(granted)
                    + " when " + Durations.format(requested) + " was asked (" + DemoSettings.SESSION_TIMEOUT_FLAG
                    + "), and " + DemoSettings.PAUSE_FLAG + " " + Durations.format(pause)
                    + " does not exceed it: a frozen worker would keep its lock; use " + DemoSettings.PAUSE_FLAG
                    + " " + Durations.format(granted.plus(granted.dividedBy(2))) + " or more");
        }
    }
}
