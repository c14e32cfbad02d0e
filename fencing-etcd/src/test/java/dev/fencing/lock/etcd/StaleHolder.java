package dev.fencing.lock.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.harness.ChildJvm;
import dev.fencing.jdbc.WriteOutcome;
import dev.fencing.testsupport.PostgresEndpoint;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The test's side of a {@link StaleHolderMain} JVM: starts it (under a command prefix such as {@code ip netns exec}
 * when asked), reads its lines as they come, sends it commands, and plays the late write that the stale-write
 * tests assert is refused through the fence and lands without it. {@link #close()} thaws and kills the JVM.
 */
final class StaleHolder implements AutoCloseable {
    private final ChildJvm jvm;
    private final BlockingQueue<String> lines;

    private StaleHolder(ChildJvm jvm, BlockingQueue<String> lines) {
        this.jvm = jvm;
        this.lines = lines;
    }

    /**
     * Starts the holder; it acquires lock {@link StaleHolderMain#LOCK} under {@code prefix} on {@code endpoints}
     * with a lease of {@code ttlSeconds}, and writes {@code ledger} through {@code jdbcUrl} (the URL it reaches the
     * database by, which may differ from this JVM's), with {@code pauseTolerance} (null: the default).
     */
    static StaleHolder start(
            List<String> commandPrefix,
            List<String> jvmOptions,
            List<String> endpoints,
            String prefix,
            int ttlSeconds,
            String jdbcUrl,
            PostgresEndpoint ledger,
            Duration pauseTolerance) {
        BlockingQueue<String> lines = new LinkedBlockingQueue<>();
        ChildJvm jvm = ChildJvm.start(
                "stale holder",
                1,
                commandPrefix,
                jvmOptions,
                StaleHolderMain.class.getName(),
                List.of(
                        String.join(",", endpoints),
                        prefix,
                        Integer.toString(ttlSeconds),
                        jdbcUrl,
                        ledger.user(),
                        Long.toString(pauseTolerance == null ? 0 : pauseTolerance.toMillis())),
                Map.of(StaleHolderMain.PASSWORD_ENV, ledger.password()),
                Path.of("target", StaleHolderMain.class.getSimpleName() + "-" + System.nanoTime() + ".log"),
                lines::add);
        return new StaleHolder(jvm, lines);
    }

    long pid() {
        return jvm.pid();
    }

    /** Its lines not yet taken, in order. */
    BlockingQueue<String> lines() {
        return lines;
    }

    /** The token of its grant, once it has one. */
    long token() throws InterruptedException {
        return Long.parseLong(next("TOKEN ").substring("TOKEN ".length()));
    }

    /**
     * The next line starting with {@code prefix}, skipping others; fails after 30 s without one (the holder prints
     * its checks all the time, so the wait is for the line, not for any line), or when the holder reports a
     * command that failed.
     */
    String next(String prefix) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            String line = lines.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            assertThat(line)
                    .as("a line starting with '%s' from the holder within 30 s (its log in target/)", prefix)
                    .isNotNull();
            assertThat(line).as("the holder's answer").doesNotStartWith("FAILED ");
            if (line.startsWith(prefix)) {
                return line;
            }
        }
    }

    /** Sends {@code command} and returns its answer: the next line starting with the command's first word. */
    String ask(String command) throws InterruptedException {
        jvm.send(command);
        return next(command.split(" ")[0] + " ");
    }

    /** While its lease is valid, the holder's write through the fence applies. */
    void writesThroughTheFence(Ledger ledger, long token) throws InterruptedException {
        assertThat(ask("FENCED 1")).isEqualTo("FENCED 1 " + new WriteOutcome.Applied(token));
        assertThat(ledger.value()).isEqualTo(1);
    }

    /**
     * After the lock passed to {@code nextToken} and the next holder wrote under it, the holder's late write under
     * {@code staleToken} is refused through the fence, and the same write as a plain UPDATE lands over the next
     * holder's.
     */
    void lateWriteIsRefusedWhileAPlainUpdateLands(Ledger ledger, long staleToken, long nextToken)
            throws InterruptedException {
        assertThat(ledger.write(2, nextToken)).isEqualTo(new WriteOutcome.Applied(nextToken));

        assertThat(ask("FENCED 3")).isEqualTo("FENCED 3 " + new WriteOutcome.Rejected(nextToken, staleToken));
        assertThat(ledger.value())
                .as("the next holder's value, kept by the fence")
                .isEqualTo(2);

        assertThat(ask("PLAIN 3")).as("the same write as a plain UPDATE").isEqualTo("PLAIN 3 1");
        assertThat(ledger.value())
                .as("without the fence, the late write lands over the next holder's")
                .isEqualTo(3);
    }

    @Override
    public void close() {
        jvm.close();
    }
}
