package dev.fencing.lock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.lock.FencedLock;
import dev.fencing.lock.Lease;
import dev.fencing.lock.zookeeper.internal.FrozenBeforeRegistrationMain;
import dev.fencing.testsupport.EmbeddedZooKeeper;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A real stop-the-world pause: a holder in a child JVM is frozen with SIGSTOP for longer than its
 * session timeout (a Thread.sleep would not do: the heartbeat thread would keep the session alive).
 */
class PausedHolderIT {
    private static final int SESSION_TIMEOUT_MS = 2_000;

    @Test
    void aFrozenHolderLosesTheLockToAGreaterTokenAndLearnsItOnResume() throws Exception {
        String path = "/it/paused-holder";
        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder().build();
                ZooKeeperClients clients = new ZooKeeperClients(zk.connectString())) {
            FencedLock contender =
                    clients.locks(clients.newClient(Duration.ofSeconds(10))).lock(path);
            Process holder = startHolder(zk.connectString(), path);
            try {
                BlockingQueue<String> lines = readLines(holder);
                String held = lines.poll(60, TimeUnit.SECONDS);
                assertThat(held).as("child's first line").startsWith("HELD ");
                long frozenToken = Long.parseLong(held.substring("HELD ".length()));
                assertThat(lines.poll(60, TimeUnit.SECONDS))
                        .as("the lease stayed valid before the pause")
                        .isEqualTo("STEADY");

                signal("STOP", holder.pid());
                long successorToken;
                try (Lease successor =
                        contender.tryAcquire(Duration.ofSeconds(30)).orElseThrow()) {
                    successorToken = successor.token();
                    assertThat(successorToken).isGreaterThan(frozenToken);
                    signal("CONT", holder.pid());

                    String lost = lines.poll(30, TimeUnit.SECONDS);
                    String nodeOwned = lines.poll(30, TimeUnit.SECONDS);
                    String verify = lines.poll(30, TimeUnit.SECONDS);
                    assertThat(lost).as("child after SIGCONT").startsWith("LOST ");
                    assertThat(nodeOwned).startsWith("NODE_OWNED ");
                    assertThat(verify).isEqualTo("VERIFY false");
                    assertThat(successor.verify())
                            .as("the new holder still holds the lock")
                            .isTrue();
                }
                assertThat(holder.waitFor(30, TimeUnit.SECONDS)).isTrue();
                assertThat(holder.exitValue()).isZero();
            } finally {
                signal("CONT", holder.pid());
                holder.destroyForcibly();
            }
        }
    }

    /**
     * A pause far shorter than the session timeout: ZooKeeper and Curator see nothing wrong (the holder's
     * node and session survive), so only the pause detector can tell the holder that its lease may have
     * outlived its safety margin.
     */
    @Test
    void aPauseLongerThanTheToleranceButShorterThanTheSessionIsReportedAsPauseDetected() throws Exception {
        String path = "/it/paused-briefly";
        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder().build()) {
            Process holder = startHolder(zk.connectString(), path, 10_000, 300L);
            try {
                BlockingQueue<String> lines = readLines(holder);
                String held = lines.poll(60, TimeUnit.SECONDS);
                assertThat(held).as("child's first line").startsWith("HELD ");
                assertThat(lines.poll(60, TimeUnit.SECONDS))
                        .as("the lease stayed valid for longer than the tolerance before the pause")
                        .isEqualTo("STEADY");

                signal("STOP", holder.pid());
                // the fault itself, not a wait for a condition: a 1.5 s stop, five times the 300 ms
                // tolerance and well inside the 10 s session
                Thread.sleep(1_500);
                signal("CONT", holder.pid());

                String lost = lines.poll(20, TimeUnit.SECONDS);
                assertThat(lost).as("child after SIGCONT").startsWith("LOST PAUSE_DETECTED ");
                assertThat(lines.poll(20, TimeUnit.SECONDS))
                        .as("the holder's node and session survived: ZooKeeper saw nothing")
                        .isEqualTo("NODE_OWNED true");
                assertThat(lines.poll(20, TimeUnit.SECONDS)).isEqualTo("VERIFY false");
                assertThat(holder.waitFor(30, TimeUnit.SECONDS)).isTrue();
                assertThat(holder.exitValue()).isZero();
            } finally {
                signal("CONT", holder.pid());
                holder.destroyForcibly();
            }
        }
    }

    /**
     * The pause falls between Curator's grant and the registration of the hold: nothing is registered
     * for the pause detector to invalidate, and ZooKeeper sees nothing (the session survives). The
     * grant must still come out invalid.
     */
    @Test
    void aPauseBetweenTheGrantAndItsRegistrationYieldsALeaseInvalidFromTheStart() throws Exception {
        String path = "/it/paused-before-registration";
        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder().build()) {
            Process acquirer = start(
                    FrozenBeforeRegistrationMain.class, zk.connectString(), path, Integer.toString(10_000), "300");
            try {
                BlockingQueue<String> lines = readLines(acquirer);
                assertThat(lines.poll(60, TimeUnit.SECONDS)).isEqualTo("AT_HOOK");

                signal("STOP", acquirer.pid());
                // the fault itself: a 1.5 s stop, five times the 300 ms tolerance, inside the 10 s session
                Thread.sleep(1_500);
                signal("CONT", acquirer.pid());
                acquirer.getOutputStream().write('\n');
                acquirer.getOutputStream().flush();

                assertThat(lines.poll(20, TimeUnit.SECONDS))
                        .as("the grant after the pause")
                        .matches("GRANTED \\d+ false PAUSE_DETECTED");
                assertThat(acquirer.waitFor(30, TimeUnit.SECONDS)).isTrue();
                assertThat(acquirer.exitValue()).isZero();
            } finally {
                signal("CONT", acquirer.pid());
                acquirer.destroyForcibly();
            }
        }
    }

    private static Process startHolder(String connect, String path) throws IOException {
        return startHolder(connect, path, SESSION_TIMEOUT_MS, null);
    }

    private static Process startHolder(String connect, String path, int sessionTimeoutMs, Long pauseToleranceMs)
            throws IOException {
        List<String> args = new ArrayList<>(List.of(connect, path, Integer.toString(sessionTimeoutMs)));
        if (pauseToleranceMs != null) {
            args.add(Long.toString(pauseToleranceMs));
        }
        return start(PausedHolderMain.class, args.toArray(String[]::new));
    }

    private static Process start(Class<?> main, String... args) throws IOException {
        return ChildJvm.start(main, args);
    }

    private static BlockingQueue<String> readLines(Process process) {
        return ChildJvm.lines(process);
    }

    private static void signal(String signal, long pid) throws IOException, InterruptedException {
        new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).start().waitFor();
    }
}
