package dev.fencing.lock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.testsupport.EmbeddedZooKeeper;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A pause tolerance that is not below the session timeout would let a pause that expired the session go unseen:
 * the lease would read valid after the JVM resumed while another client held the lock.
 */
class PauseToleranceIT {
    private final List<AutoCloseable> opened = new ArrayList<>();

    @AfterEach
    void close() throws Exception {
        for (int i = opened.size() - 1; i >= 0; i--) {
            opened.get(i).close();
        }
    }

    @Test
    void buildRefusesAToleranceNotBelowTheSessionTimeoutTheClientNegotiatedNamingBoth() throws Exception {
        EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder().build();
        opened.add(zk);
        CuratorFramework client = client(zk.connectString(), Duration.ofSeconds(4));
        assertThat(client.blockUntilConnected(10, TimeUnit.SECONDS)).isTrue();
        assertThat(client.getZookeeperClient().getLastNegotiatedSessionTimeoutMs())
                .isEqualTo(4_000);

        for (Duration tooLong : new Duration[] {Duration.ofSeconds(4), Duration.ofSeconds(6)}) {
            assertThatThrownBy(() ->
                            FencedLocks.builder(client).pauseTolerance(tooLong).build())
                    .as("pauseTolerance %s", tooLong)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("pauseTolerance " + tooLong)
                    .hasMessageContaining("4000 ms");
        }
        FencedLocks.builder(client)
                .pauseTolerance(Duration.ofMillis(3_999))
                .build()
                .close();
    }

    private CuratorFramework client(String connectString, Duration sessionTimeout) {
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connectString)
                .sessionTimeoutMs((int) sessionTimeout.toMillis())
                .connectionTimeoutMs(5_000)
                .retryPolicy(new ExponentialBackoffRetry(50, 10, 1_000))
                .build();
        client.start();
        opened.add(client);
        return client;
    }
}
