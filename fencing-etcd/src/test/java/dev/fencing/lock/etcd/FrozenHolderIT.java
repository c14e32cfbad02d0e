package dev.fencing.lock.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.lock.Lease;
import dev.fencing.testsupport.EtcdServers;
import dev.fencing.testsupport.ProcessFreezer;
import io.etcd.jetcd.Client;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A holder JVM frozen (SIGSTOP) past its lease's TTL: etcd expires the lease and deletes the key, the lock passes
 * to this JVM with a greater token, and every check the resumed holder begins after its SIGCONT reads invalid,
 * though nothing has told it yet that its lease is gone.
 */
class FrozenHolderIT {
    private static final int TTL_SECONDS = 3;

    @Test
    void everyCheckAResumedHolderBeginsAfterItsLeaseExpiredReadsInvalidWhileTheNextHolderHoldsAGreaterToken()
            throws Exception {
        String endpoints = String.join(",", EtcdServers.shared().endpoints());
        String prefix = "it/frozen-" + System.nanoTime();
        Process holder = start(endpoints, prefix);
        BlockingQueue<String> lines = lines(holder);
        Client client = Client.builder().endpoints(endpoints.split(",")).build();
        try (EtcdLocks locks = EtcdLocks.builder(client)
                .prefix(prefix)
                .leaseTtl(Duration.ofSeconds(TTL_SECONDS))
                .build()) {
            long frozenToken = Long.parseLong(next(lines, "TOKEN ").substring(6));
            for (int i = 0; i < 5; i++) {
                assertThat(next(lines, "RESULT ")).endsWith(" true null");
            }

            Lease taken;
            long lastBegunBeforeResume;
            try (ProcessFreezer.Frozen frozen = ProcessFreezer.freeze(holder.pid(), Duration.ofSeconds(60))) {
                // etcd expires the frozen holder's lease a TTL after its last keep-alive and deletes its key
                taken = locks.lock("frozen").acquire();
                assertThat(frozen.elapsed()).isGreaterThan(Duration.ofSeconds(TTL_SECONDS - 1));
                lastBegunBeforeResume = lastBegun(lines);
            }

            List<String> afterResume = new ArrayList<>();
            while (afterResume.size() < 20) {
                String line = next(lines, "RESULT ");
                String[] parts = line.split(" ");
                if (Long.parseLong(parts[1]) > lastBegunBeforeResume) {
                    afterResume.add(line);
                }
            }
            assertThat(taken.token()).isGreaterThan(frozenToken);
            assertThat(taken.isValid()).isTrue();
            assertThat(afterResume).allMatch(line -> line.split(" ")[2].equals("false"), "reads invalid");
            taken.close();
        } finally {
            holder.destroyForcibly();
            holder.waitFor(10, TimeUnit.SECONDS);
            client.close();
        }
    }

    /** The highest n of a {@code BEGIN n} printed so far; the holder is frozen, so nothing more comes. */
    private static long lastBegun(BlockingQueue<String> lines) throws InterruptedException {
        long last = -1;
        List<String> seen = new ArrayList<>();
        lines.drainTo(seen);
        for (String line : seen) {
            if (line.startsWith("BEGIN ")) {
                last = Long.parseLong(line.substring(6));
            }
        }
        // put the RESULT lines back for the caller, in order, ahead of anything that comes later
        List<String> rest = new ArrayList<>(seen);
        lines.drainTo(rest);
        lines.addAll(rest);
        return last;
    }

    private static String next(BlockingQueue<String> lines, String prefix) throws InterruptedException {
        while (true) {
            String line = lines.poll(30, TimeUnit.SECONDS);
            assertThat(line)
                    .as("a line starting with '%s' from the holder", prefix)
                    .isNotNull();
            if (line.startsWith(prefix)) {
                return line;
            }
        }
    }

    private static Process start(String endpoints, String prefix) throws IOException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        File log = Path.of("target", "FrozenHolderMain-" + System.nanoTime() + ".log")
                .toFile();
        return new ProcessBuilder(
                        java,
                        "-cp",
                        System.getProperty("java.class.path"),
                        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                        FrozenHolderMain.class.getName(),
                        endpoints,
                        prefix,
                        String.valueOf(TTL_SECONDS))
                .redirectError(ProcessBuilder.Redirect.to(log))
                .start();
    }

    private static BlockingQueue<String> lines(Process process) {
        BlockingQueue<String> lines = new LinkedBlockingQueue<>();
        Thread reader = new Thread(() -> {
            try (BufferedReader in =
                    new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line = in.readLine(); line != null; line = in.readLine()) {
                    lines.add(line);
                }
            } catch (IOException ignored) {
                // the holder ended
            }
        });
        reader.setDaemon(true);
        reader.start();
        return lines;
    }
}
