package dev.fencing.harness;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CoordinatorTest {
    @TempDir
    Path directory;

    private final ByteArrayOutputStream console = new ByteArrayOutputStream();
    private final PrintStream progress = new PrintStream(console, true, StandardCharsets.UTF_8);

    /** Servers that only say whether they were closed. */
    static final class FakeServers implements AutoCloseable {
        boolean closed;

        @Override
        public void close() {
            closed = true;
        }
    }

    /** Two modes whose runs are their names; a mode named "broken" fails, one named "bad" fails the verdict. */
    final class Fake implements Experiment<FakeServers, String, String> {
        final List<String> modes;
        final Path json;
        final List<String> events = new ArrayList<>();
        FakeServers servers;

        Fake(List<String> modes, Path json) {
            this.modes = modes;
            this.json = json;
        }

        @Override
        public Plan<String> plan() {
            return new Plan<>(
                    "tool",
                    "seed 42",
                    modes,
                    new Outputs("--html", directory.resolve("report.html"), "HTML report", "--json", json));
        }

        @Override
        public FakeServers open(PrintStream out) {
            events.add("open");
            servers = new FakeServers();
            return servers;
        }

        @Override
        public Runner<String, String> prepare(FakeServers open, PrintStream out) {
            events.add("prepare");
            return mode -> {
                if (mode.equals("broken")) {
                    throw new HarnessException("the broken run failed");
                }
                events.add("run " + mode);
                return mode;
            };
        }

        @Override
        public String table(List<String> runs) {
            return "table " + runs + "\n";
        }

        @Override
        public String html(List<String> runs) {
            return "<html>" + runs + "</html>";
        }

        @Override
        public String json(List<String> runs) {
            return "{\"runs\":" + runs.size() + "}";
        }

        @Override
        public Verdict verdict(List<String> runs) {
            return runs.contains("bad")
                    ? new Verdict(List.of("FAILED: the bad run"), List.of("a note"), "unused")
                    : new Verdict(List.of(), List.of("a note"), "every run went well");
        }
    }

    @Test
    void runsEveryModeOnceOnServersOpenedOnceThenReportsAndPasses() throws Exception {
        Fake fake = new Fake(List.of("unfenced", "fenced"), directory.resolve("summary.json"));

        int code = Coordinator.run(fake, progress);

        assertThat(code).isEqualTo(Cli.EXIT_OK);
        assertThat(fake.events).containsExactly("open", "prepare", "run unfenced", "run fenced");
        assertThat(fake.servers.closed).isTrue();
        assertThat(Files.readString(directory.resolve("report.html"))).isEqualTo("<html>[unfenced, fenced]</html>");
        assertThat(Files.readString(directory.resolve("summary.json"))).isEqualTo("{\"runs\":2}");
        assertThat(console.toString(StandardCharsets.UTF_8))
                .isEqualTo("tool: seed 42\n\ntable [unfenced, fenced]\n"
                        + "HTML report: " + directory.resolve("report.html").toAbsolutePath() + "\n"
                        + "JSON summary: " + directory.resolve("summary.json").toAbsolutePath() + "\n"
                        + "a note\npassed: every run went well\n");
    }

    @Test
    void aFailedVerdictPrintsItsFailuresAfterItsNotesAndExitsOne() throws Exception {
        Fake fake = new Fake(List.of("bad"), null);

        int code = Coordinator.run(fake, progress);

        assertThat(code).isEqualTo(Cli.EXIT_FAILURE);
        assertThat(console.toString(StandardCharsets.UTF_8))
                .endsWith("a note\nFAILED: the bad run\n")
                .doesNotContain("passed")
                .doesNotContain("JSON summary");
    }

    @Test
    void aRunThatFailsStillStopsTheServersAndWritesNoReport() {
        Fake fake = new Fake(List.of("broken", "fenced"), null);

        assertThatThrownBy(() -> Coordinator.run(fake, progress)).hasMessage("the broken run failed");

        assertThat(fake.servers.closed).isTrue();
        assertThat(fake.events).containsExactly("open", "prepare");
        assertThat(directory.resolve("report.html")).doesNotExist();
    }

    @Test
    void aReportThatCannotBeWrittenIsAUsageErrorBeforeAnyServerStarts() {
        Fake fake = new Fake(List.of("fenced"), directory.resolve("missing").resolve("summary.json"));

        assertThatThrownBy(() -> Coordinator.run(fake, progress))
                .isInstanceOf(UsageException.class)
                .hasMessageStartingWith("--json ")
                .hasMessageContaining("does not exist");

        assertThat(fake.events).isEmpty();
    }
}
