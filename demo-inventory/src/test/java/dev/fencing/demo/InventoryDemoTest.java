package dev.fencing.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine.ParameterException;

class InventoryDemoTest {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int run(String... args) {
        return InventoryDemo.execute(
                new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8),
                args);
    }

    private String errors() {
        return err.toString(StandardCharsets.UTF_8);
    }

    @Test
    void defaultsMakeTheUnfencedRunThenTheFencedOneOnEmbeddedServers() {
        DemoSettings settings = InventoryDemo.parse();

        assertThat(settings.modes()).containsExactly(Mode.UNFENCED, Mode.FENCED);
        assertThat(settings.allEmbedded()).isTrue();
        assertThat(settings.pause()).isGreaterThan(settings.sessionTimeout());
        assertThat(settings).isEqualTo(DemoSettings.defaults());
    }

    @Test
    void readsEveryFlag() {
        DemoSettings settings = InventoryDemo.parse(
                "--zookeeper", "zk1:2181,zk2:2181",
                "--jdbc-url", "jdbc:postgresql://db:5432/shop",
                "--jdbc-user", "shop",
                "--jdbc-password", "secret",
                "--kafka", "k1:9092",
                "--workers", "6",
                "--skus", "5",
                "--initial-stock", "40",
                "--duration", "1m",
                "--pause", "4.5s",
                "--pause-every", "PT3S",
                "--session-timeout", "3s",
                "--work", "50ms",
                "--seed", "7",
                "--mode", "fenced",
                "--json", "out/summary.json",
                "--html", "out/report.html");

        assertThat(settings.zookeeperConnect()).isEqualTo("zk1:2181,zk2:2181");
        assertThat(settings.jdbcUrl()).isEqualTo("jdbc:postgresql://db:5432/shop");
        assertThat(settings.jdbcUser()).isEqualTo("shop");
        assertThat(settings.jdbcPassword()).isEqualTo("secret");
        assertThat(settings.kafkaBootstrap()).isEqualTo("k1:9092");
        assertThat(settings.workers()).isEqualTo(6);
        assertThat(settings.skus()).isEqualTo(5);
        assertThat(settings.initialStock()).isEqualTo(40);
        assertThat(settings.duration()).isEqualTo(Duration.ofMinutes(1));
        assertThat(settings.pause()).isEqualTo(Duration.ofMillis(4_500));
        assertThat(settings.pauseEvery()).isEqualTo(Duration.ofSeconds(3));
        assertThat(settings.sessionTimeout()).isEqualTo(Duration.ofSeconds(3));
        assertThat(settings.work()).isEqualTo(Duration.ofMillis(50));
        assertThat(settings.seed()).isEqualTo(7);
        assertThat(settings.modes()).containsExactly(Mode.FENCED);
        assertThat(settings.jsonFile()).isEqualTo(Path.of("out/summary.json"));
        assertThat(settings.htmlFile()).isEqualTo(Path.of("out/report.html"));
        assertThat(settings.toString()).doesNotContain("secret");
    }

    @Test
    void rejectsAnUnknownFlagWithAUsageExit() {
        int code = run("--bogus");

        assertThat(code).isEqualTo(InventoryDemo.EXIT_USAGE);
        assertThat(errors()).contains("Unknown option: '--bogus'");
    }

    @Test
    void rejectsAPauseThatIsNotLongerThanTheSessionTimeoutNamingBothValues() {
        int code = run("--pause", "1500ms", "--session-timeout", "2s");

        assertThat(code).isEqualTo(InventoryDemo.EXIT_USAGE);
        assertThat(errors())
                .contains("--pause 1.5s is not longer than --session-timeout 2s")
                .contains("--pause 3s");
    }

    @Test
    void rejectsAPauseEqualToTheSessionTimeout() {
        assertThatThrownBy(() -> InventoryDemo.parse("--pause", "2s", "--session-timeout", "2s"))
                .isInstanceOf(ParameterException.class)
                .hasMessageContaining("--pause 2s is not longer than --session-timeout 2s");
    }

    @Test
    void rejectsAMalformedDurationNamingIt() {
        int code = run("--duration", "5x");

        assertThat(code).isEqualTo(InventoryDemo.EXIT_USAGE);
        assertThat(errors()).contains("'5x' is not a duration");
    }

    @Test
    void rejectsOutOfRangeNumbersNamingTheFlagAndValue() {
        assertThatThrownBy(() -> InventoryDemo.parse("--workers", "0"))
                .isInstanceOf(ParameterException.class)
                .hasMessage("--workers must be between 1 and 32, got 0");
        assertThatThrownBy(() -> InventoryDemo.parse("--initial-stock", "-5"))
                .isInstanceOf(ParameterException.class)
                .hasMessage("--initial-stock must be between 1 and 1000000, got -5");
        assertThatThrownBy(() -> InventoryDemo.parse("--duration", "1s"))
                .isInstanceOf(ParameterException.class)
                .hasMessage("--duration must be between 3s and 1h, got 1s");
        assertThatThrownBy(() -> InventoryDemo.parse("--pause", "6m"))
                .isInstanceOf(ParameterException.class)
                .hasMessage("--pause must be between 100ms and 5m, got 6m");
    }

    @Test
    void rejectsAnUnknownMode() {
        int code = run("--mode", "sometimes");

        assertThat(code).isEqualTo(InventoryDemo.EXIT_USAGE);
        assertThat(errors()).contains("--mode must be unfenced, lease-check, fenced, both or all, got 'sometimes'");
    }

    @Test
    void rejectsAJdbcUrlThatIsNotPostgres() {
        assertThatThrownBy(() -> InventoryDemo.parse("--jdbc-url", "jdbc:mysql://db/shop"))
                .isInstanceOf(ParameterException.class)
                .hasMessage("--jdbc-url must be a jdbc:postgresql: URL, got 'jdbc:mysql://db/shop'");
    }

    @Test
    void parsesModes() {
        assertThat(DemoSettings.parseModes("both")).isEqualTo(List.of(Mode.UNFENCED, Mode.FENCED));
        assertThat(DemoSettings.parseModes("unfenced")).isEqualTo(List.of(Mode.UNFENCED));
        assertThat(DemoSettings.parseModes("lease-check")).isEqualTo(List.of(Mode.LEASE_CHECK));
        assertThat(DemoSettings.parseModes("all")).isEqualTo(List.of(Mode.UNFENCED, Mode.LEASE_CHECK, Mode.FENCED));
    }

    @Test
    void printsUsageWithEveryFlagOnHelp() {
        int code = run("--help");

        assertThat(code).isZero();
        assertThat(out.toString(StandardCharsets.UTF_8))
                .contains(
                        DemoSettings.ZOOKEEPER_FLAG,
                        DemoSettings.JDBC_URL_FLAG,
                        DemoSettings.KAFKA_FLAG,
                        DemoSettings.WORKERS_FLAG,
                        DemoSettings.SKUS_FLAG,
                        DemoSettings.INITIAL_STOCK_FLAG,
                        DemoSettings.DURATION_FLAG,
                        DemoSettings.PAUSE_FLAG,
                        DemoSettings.PAUSE_EVERY_FLAG,
                        DemoSettings.SESSION_TIMEOUT_FLAG,
                        DemoSettings.SEED_FLAG,
                        DemoSettings.MODE_FLAG,
                        DemoSettings.JSON_FLAG,
                        DemoSettings.HTML_FLAG,
                        DemoSettings.MIN_LANDED_PAUSES_FLAG,
                        DemoSettings.KEEP_FLAG)
                .contains("1 to 32", "1s to 10s", "500ms tickTime");
    }

    /** The last line of standard error: what a terminal leaves in view. */
    private String lastErrorLine() {
        String[] lines = errors().strip().split("\n");
        return lines[lines.length - 1];
    }

    @Test
    void aFlagErrorIsOneLinePrintedLastWithoutTheFullUsage() {
        int code = run("--workers", "0");

        assertThat(code).isEqualTo(InventoryDemo.EXIT_USAGE);
        assertThat(lastErrorLine()).isEqualTo("demo-inventory: --workers must be between 1 and 32, got 0");
        assertThat(errors().lines().count()).isEqualTo(2);
    }

    @Test
    void aWordWhereANumberBelongsIsCalledThatInPlainWords() {
        int code = run("--seed", "forty-two");

        assertThat(code).isEqualTo(InventoryDemo.EXIT_USAGE);
        assertThat(lastErrorLine())
                .contains("--seed", "'forty-two' is not a whole number")
                .doesNotContain("long");
        assertThat(run("--workers", "many")).isEqualTo(InventoryDemo.EXIT_USAGE);
        assertThat(lastErrorLine()).contains("'many' is not a whole number").doesNotContain(" int");
    }

    @Test
    void aNegativeDurationIsCalledNegative() {
        int code = run("--work", "-1s");

        assertThat(code).isEqualTo(InventoryDemo.EXIT_USAGE);
        assertThat(lastErrorLine()).contains("--work", "'-1s' is negative").doesNotContain("not a duration");
        assertThat(run("--work", "PT-1S")).isEqualTo(InventoryDemo.EXIT_USAGE);
        assertThat(lastErrorLine()).contains("'PT-1S' is negative");
    }

    @Test
    void aSessionTimeoutTheEmbeddedZooKeeperCannotGrantIsRefusedWithTheReason() {
        int code = run("--session-timeout", "30s", "--pause", "40s");

        assertThat(code).isEqualTo(InventoryDemo.EXIT_USAGE);
        assertThat(lastErrorLine())
                .isEqualTo("demo-inventory: --session-timeout 30s is more than the embedded ZooKeeper grants: at most"
                        + " 20 x its 500ms tickTime = 10s; use --zookeeper with a server whose maxSessionTimeout"
                        + " allows more");
        // with an external server, the demo reads what it grants instead
        assertThat(InventoryDemo.parse("--zookeeper", "zk:2181", "--session-timeout", "30s", "--pause", "40s")
                        .sessionTimeout())
                .isEqualTo(Duration.ofSeconds(30));
    }

    @Test
    void aMinimumOfLandedPausesBelowOneIsRefused() {
        assertThat(run("--min-landed-pauses", "0")).isEqualTo(InventoryDemo.EXIT_USAGE);
        assertThat(lastErrorLine()).isEqualTo("demo-inventory: --min-landed-pauses must be between 1 and 1000, got 0");
    }

    @Test
    void anOutputPathInAMissingDirectoryStopsTheDemoBeforeAnyServerStarts(@TempDir Path directory) {
        Path json = directory.resolve("no-such-dir/summary.json");

        int code = run("--json", json.toString());

        assertThat(code).isEqualTo(InventoryDemo.EXIT_USAGE);
        assertThat(lastErrorLine())
                .isEqualTo("demo-inventory: --json " + json + ": directory " + json.getParent()
                        + " does not exist; create it first or choose another file");
        assertThat(out.toString(StandardCharsets.UTF_8)).doesNotContain("starting embedded servers");
        assertThat(json.getParent()).doesNotExist();
    }

    @Test
    void anHtmlPathThatIsADirectoryStopsTheDemoBeforeAnyServerStarts(@TempDir Path directory) {
        int code = run("--html", directory.toString());

        assertThat(code).isEqualTo(InventoryDemo.EXIT_USAGE);
        assertThat(lastErrorLine()).isEqualTo("demo-inventory: --html " + directory + " is a directory; name a file");
        assertThat(out.toString(StandardCharsets.UTF_8)).doesNotContain("starting embedded servers");
    }
}
