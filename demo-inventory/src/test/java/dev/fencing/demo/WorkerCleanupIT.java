package dev.fencing.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kills the coordinator JVM while one of its workers is frozen by SIGSTOP, and checks that no worker is left
 * frozen or running: after Ctrl-C (SIGINT, the shutdown hook) and after SIGKILL (no hook runs; the resumer
 * thaws the worker and the worker sees its parent gone).
 */
class WorkerCleanupIT {
    private static final Pattern POSTGRES =
            Pattern.compile("embedded PostgreSQL at jdbc:postgresql://([^:/]+):(\\d+)/");
    private static final Pattern DATA = Pattern.compile("embedded servers' data in (\\S+)");
    private static final Pattern FROZEN = Pattern.compile("SIGSTOP worker (\\d+) \\(pid (\\d+)\\)");

    @TempDir
    Path directory;

    private final List<ProcessHandle> started = new ArrayList<>();

    @AfterEach
    void stopLeftovers() {
        // an orphaned embedded PostgreSQL after SIGKILL, or anything a failed test left behind
        started.stream().filter(ProcessHandle::isAlive).forEach(ProcessHandle::destroy);
    }

    @Test
    void ctrlCThawsAndStopsEveryWorkerAndTheEmbeddedServers() throws IOException {
        Coordinator coordinator = startCoordinatorAndFreezeAWorker("3s");

        // when: Ctrl-C, as a terminal sends it. A build started in the background by a non-interactive shell
        // runs with SIGINT ignored, and the coordinator inherits that (a JVM keeps an ignored SIGINT ignored):
        // there, SIGTERM, which runs the same shutdown hook, stands in for it.
        signal(sigintIgnored() ? "TERM" : "INT", coordinator.process.pid());

        // then
        await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(coordinator.process.isAlive())
                .as(() -> "the coordinator still runs 60 s after Ctrl-C; it printed " + coordinator.lines)
                .isFalse());
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(coordinator.descendants).noneMatch(WorkerCleanupIT::running));
        await().atMost(Duration.ofSeconds(30)).until(() -> !running(coordinator.postgres));
        // and it says so
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(coordinator.lines)
                .anyMatch(line -> line.startsWith("demo-inventory: interrupted")));
    }

    @Test
    void aKilledCoordinatorLeavesNoWorkerFrozenOrRunning() throws IOException {
        // a 30 s pause: the resumer's own time limit (2 x 30 s + 5 s) is far beyond the wait below
        Coordinator coordinator = startCoordinatorAndFreezeAWorker("30s");

        // when: SIGKILL, no shutdown hook runs
        coordinator.process.destroyForcibly();

        // then: the resumer sends SIGCONT as soon as the coordinator is gone, and every worker exits on its own
        await().atMost(Duration.ofSeconds(30))
                .untilAsserted(() -> assertThat(coordinator.workers).noneMatch(WorkerCleanupIT::running));
        // and the embedded PostgreSQL (a daemon, not a child) is stopped by its watchdog, which then removes
        // the servers' data
        await().atMost(Duration.ofSeconds(30)).until(() -> !running(coordinator.postgres));
        await().atMost(Duration.ofSeconds(30)).until(() -> !Files.exists(coordinator.data()));
    }

    private record Coordinator(
            Process process,
            List<ProcessHandle> workers,
            List<ProcessHandle> descendants,
            ProcessHandle postgres,
            Queue<String> lines) {
        Path data() {
            return lines.stream()
                    .map(DATA::matcher)
                    .filter(Matcher::find)
                    .map(m -> Path.of(m.group(1)))
                    .findFirst()
                    .orElseThrow();
        }
    }

    private Coordinator startCoordinatorAndFreezeAWorker(String pause) throws IOException {
        Path log = directory.resolve("coordinator.log");
        Process process = new ProcessBuilder(
                        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                        "-cp",
                        System.getProperty("java.class.path"),
                        InventoryDemo.class.getName(),
                        "--mode",
                        "unfenced",
                        "--workers",
                        "2",
                        "--skus",
                        "1",
                        "--initial-stock",
                        "100000",
                        "--duration",
                        "120s",
                        "--pause",
                        pause,
                        "--session-timeout",
                        "2s",
                        "--pause-every",
                        "500ms",
                        "--html",
                        directory.resolve("report.html").toString())
                .redirectErrorStream(true)
                .start();
        started.add(process.toHandle());
        Queue<String> lines = new ConcurrentLinkedQueue<>();
        Thread reader = new Thread(() -> copy(process, lines, log), "coordinator-output");
        reader.setDaemon(true);
        reader.start();

        long[] frozenPid = new long[1];
        await().atMost(Duration.ofSeconds(180)).until(() -> {
            for (String line : lines) {
                Matcher matcher = FROZEN.matcher(line);
                if (matcher.find()) {
                    frozenPid[0] = Long.parseLong(matcher.group(2));
                    return true;
                }
            }
            assertThat(process.isAlive())
                    .as("coordinator alive; output: %s", lines)
                    .isTrue();
            return false;
        });
        assertThat(state(frozenPid[0]))
                .as("state of frozen worker %d", frozenPid[0])
                .isEqualTo("T");

        List<ProcessHandle> descendants = process.descendants().toList();
        started.addAll(descendants);
        List<ProcessHandle> workers = descendants.stream()
                .filter(p -> commandLine(p).contains(WorkerMain.class.getName()))
                .toList();
        assertThat(workers)
                .extracting(ProcessHandle::pid)
                .contains(frozenPid[0])
                .hasSize(2);
        String port = lines.stream()
                .map(POSTGRES::matcher)
                .filter(Matcher::find)
                .map(m -> m.group(2))
                .findFirst()
                .orElseThrow();
        // the embedded server is a daemon (its parent is init), found by its port
        ProcessHandle postgres = ProcessHandle.allProcesses()
                .filter(p -> {
                    String command = commandLine(p);
                    return command.contains("bin/postgres\0") && command.contains("\0-p\0" + port + "\0");
                })
                .findFirst()
                .orElseThrow();
        started.add(postgres);
        return new Coordinator(process, workers, descendants, postgres, lines);
    }

    private static void copy(Process process, Queue<String> lines, Path log) {
        try (BufferedReader in =
                new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                lines.add(line);
                Files.writeString(
                        log,
                        line + "\n",
                        StandardCharsets.UTF_8,
                        java.nio.file.StandardOpenOption.CREATE,
                        java.nio.file.StandardOpenOption.APPEND);
            }
        } catch (IOException e) {
            // the coordinator is gone
        }
    }

    /** From /proc: ProcessHandle.Info leaves the command line out when it is long. */
    private static String commandLine(ProcessHandle process) {
        try {
            return Files.readString(Path.of("/proc", Long.toString(process.pid()), "cmdline"), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "";
        }
    }

    /**
     * Whether the process still runs. {@link ProcessHandle#isAlive()} is true for a zombie, and the processes
     * here end as orphans whose reaping is up to whatever runs as pid 1: one that reaps only once per SIGCHLD
     * leaves a zombie behind when two orphans exit together, and would fail the test on a process that has
     * ended.
     */
    private static boolean running(ProcessHandle process) {
        if (!process.isAlive()) {
            return false; // gone, or its pid reused (isAlive compares start times)
        }
        try {
            String state = state(process.pid());
            return !state.equals("Z") && !state.equals("X");
        } catch (IOException e) {
            return false; // gone from /proc
        }
    }

    /** The process state letter from /proc: R, S, T (stopped), Z... */
    private static String state(long pid) throws IOException {
        String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
        return stat.substring(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    }

    /** Whether this process ignores SIGINT (bit 2 of {@code SigIgn} in {@code /proc/self/status}). */
    private static boolean sigintIgnored() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("SigIgn:")) {
                return (Long.parseLong(line.substring("SigIgn:".length()).trim(), 16) & (1L << 1)) != 0;
            }
        }
        return false;
    }

    private static void signal(String signal, long pid) throws IOException {
        try {
            Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).start();
            assertThat(kill.waitFor(10, TimeUnit.SECONDS)).isTrue();
            assertThat(kill.exitValue()).isZero();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
    }
}
