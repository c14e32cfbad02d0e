package dev.fencing.harness;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class StartedServersTest {
    @Test
    void stopsNewestFirstEvenPastAFailureThenDeletesTheRunDirectory() {
        List<String> stopped = new ArrayList<>();
        ByteArrayOutputStream said = new ByteArrayOutputStream();
        StartedServers started = new StartedServers();
        Path data = started.runDirectory(
                "started-servers-test-", "a test", new PrintStream(said, true, StandardCharsets.UTF_8));
        started.add(() -> stopped.add("zookeeper"));
        started.add(() -> {
            stopped.add("postgres");
            throw new IllegalStateException("already gone");
        });
        started.add(() -> stopped.add("kafka"));

        started.close();
        started.close(); // twice is harmless

        assertThat(stopped).containsExactly("kafka", "postgres", "zookeeper");
        assertThat(data).doesNotExist();
        assertThat(said.toString(StandardCharsets.UTF_8)).contains("  embedded servers' data in " + data);
    }

    @Test
    void aGivenPostgresThatDoesNotAnswerIsNamedByItsFlagAddressAndUser() {
        try (StartedServers started = new StartedServers()) {
            assertThatThrownBy(() -> started.postgres(
                            "jdbc:postgresql://127.0.0.1:1/shop",
                            "shop",
                            "",
                            "--jdbc-url",
                            builder -> {},
                            new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8)))
                    .isInstanceOf(HarnessException.class)
                    .hasMessageContaining("cannot connect to PostgreSQL at jdbc:postgresql://127.0.0.1:1/shop"
                            + " (--jdbc-url) as shop");
        }
    }
}
