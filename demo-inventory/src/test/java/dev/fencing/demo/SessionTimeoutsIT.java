package dev.fencing.demo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.harness.ZooKeeperAccess;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Against a ZooKeeper configured like an ensemble's defaults (tickTime 2 s, minSessionTimeout 2 x tickTime),
 * which grants at least 4 s whatever is asked: the demo reads what was granted and refuses a pause that does
 * not outlast it, before starting any other server.
 */
class SessionTimeoutsIT {
    @TempDir
    Path directory;

    @Test
    void aPauseShorterThanTheGrantedSessionTimeoutEndsTheDemoBeforeAnyOtherServerStarts() throws Exception {
        // curator-test sets minSessionTimeout to one tickTime; ZooKeeper's own default is two
        InstanceSpec spec = new InstanceSpec(
                directory.resolve("zookeeper").toFile(),
                -1,
                -1,
                -1,
                true,
                -1,
                2_000,
                -1,
                Map.of("minSessionTimeout", "4000", "admin.enableServer", "false"),
                "127.0.0.1");
        try (TestingServer zk = new TestingServer(spec, true)) {
            // the server raises 2 s to its minimum
            assertThat(ZooKeeperAccess.grantedSessionTimeout(zk.getConnectString(), Duration.ofSeconds(2)))
                    .isEqualTo(Duration.ofSeconds(4));

            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            int code = InventoryDemo.execute(
                    new PrintStream(out, true, StandardCharsets.UTF_8),
                    new PrintStream(err, true, StandardCharsets.UTF_8),
                    "--zookeeper",
                    zk.getConnectString(),
                    "--session-timeout",
                    "2s",
                    "--pause",
                    "3s",
                    "--html",
                    directory.resolve("report.html").toString());

            assertThat(code).isEqualTo(InventoryDemo.EXIT_USAGE);
            String errors = err.toString(StandardCharsets.UTF_8).strip();
            assertThat(errors.substring(errors.lastIndexOf('\n') + 1))
                    .isEqualTo("demo-inventory: ZooKeeper granted a session timeout of 4s when 2s was asked"
                            + " (--session-timeout), and --pause 3s does not exceed it: a frozen worker would keep"
                            + " its lock; use --pause 6s or more");
            assertThat(out.toString(StandardCharsets.UTF_8))
                    .doesNotContain("starting embedded servers", "connecting to servers");
        }
    }
}
