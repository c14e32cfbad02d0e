package dev.fencing.demo;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The documented command, {@code demo-inventory/run}, passes the demo's own exit code and last line through
 * (Maven's exec plugin turned every failure into its own exit code 1 under about 90 lines). Runs after the
 * package phase, which writes the launcher's class path; {@code DEMO_SKIP_BUILD=1} reuses that build.
 */
class LauncherIT {
    private static final Path LAUNCHER = Path.of("run").toAbsolutePath();

    @TempDir
    Path directory;

    private record Result(int code, List<String> out, List<String> err) {}

    private Result launch(String... args) throws IOException, InterruptedException {
        Path out = directory.resolve("out.txt");
        Path err = directory.resolve("err.txt");
        List<String> command = new java.util.ArrayList<>(List.of("sh", LAUNCHER.toString()));
        command.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(command)
                .directory(directory.toFile())
                .redirectOutput(out.toFile())
                .redirectError(err.toFile());
        builder.environment().put("DEMO_SKIP_BUILD", "1");
        Process process = builder.start();
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
        return new Result(
                process.exitValue(),
                Files.readAllLines(out, StandardCharsets.UTF_8),
                Files.readAllLines(err, StandardCharsets.UTF_8));
    }

    @Test
    void aBadFlagExitsTwoWithTheOneUsefulLineLast() throws Exception {
        Result result = launch("--workers", "0");

        assertThat(result.code()).isEqualTo(InventoryDemo.EXIT_USAGE);
        assertThat(result.err())
                .hasSize(2)
                .last()
                .isEqualTo("demo-inventory: --workers must be between 1 and 32, got 0");
        assertThat(result.out()).isEmpty();
    }

    @Test
    void aMissingOutputDirectoryRelativeToTheCallersDirectoryExitsTwoBeforeAnyServerStarts() throws Exception {
        Result result = launch("--json", "no-such-dir/summary.json");

        assertThat(result.code()).isEqualTo(InventoryDemo.EXIT_USAGE);
        assertThat(result.err().get(result.err().size() - 1))
                .isEqualTo("demo-inventory: --json no-such-dir/summary.json: directory "
                        + directory.toRealPath().resolve("no-such-dir") + " does not exist; create it first or"
                        + " choose another file");
        assertThat(result.out()).isEmpty();
        assertThat(directory.resolve("no-such-dir")).doesNotExist();
    }

    @Test
    void helpExitsZero() throws Exception {
        Result result = launch("--help");

        assertThat(result.code()).isZero();
        assertThat(String.join("\n", result.out())).contains("--min-landed-pauses", "Exit codes: 0 passed");
    }
}
