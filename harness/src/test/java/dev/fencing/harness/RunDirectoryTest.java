package dev.fencing.harness;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RunDirectoryTest {
    private static final String PREFIX = "some-tool-run-";

    @TempDir
    Path tmp;

    private Path runDirectory(String name, String owner) throws IOException {
        Path directory = Files.createDirectories(tmp.resolve(PREFIX + name));
        Files.writeString(directory.resolve("data.bin"), "x");
        if (owner != null) {
            Files.writeString(directory.resolve("owner"), owner);
        }
        return directory;
    }

    @Test
    void removesOnlyRunDirectoriesWhoseOwnerIsGone() throws IOException {
        ProcessHandle self = ProcessHandle.current();
        long started = self.info().startInstant().orElseThrow().toEpochMilli();
        Path alive = runDirectory("alive", self.pid() + " " + started);
        Path reusedPid = runDirectory("reused", self.pid() + " " + (started - 60_000));
        Path dead = runDirectory("dead", Long.MAX_VALUE / 2 + " 0");
        Path noOwner = runDirectory("being-created", null);
        Path other = Files.createDirectories(tmp.resolve("fencing-kafka-123"));
        Path otherToolsDead = Files.createDirectories(tmp.resolve("other-tool-run-dead"));
        Files.writeString(otherToolsDead.resolve("owner"), Long.MAX_VALUE / 2 + " 0");
        ByteArrayOutputStream said = new ByteArrayOutputStream();

        int removed = RunDirectory.removeAbandoned(
                tmp, PREFIX, "a demo run", new PrintStream(said, true, StandardCharsets.UTF_8));

        assertThat(removed).isEqualTo(2);
        assertThat(dead).doesNotExist();
        assertThat(reusedPid).doesNotExist();
        assertThat(alive).exists();
        assertThat(noOwner).exists();
        assertThat(other).exists();
        assertThat(otherToolsDead).exists(); // another tool's prefix: not this caller's to judge
        assertThat(said.toString(StandardCharsets.UTF_8))
                .contains("  removed " + dead + ", left behind by a demo run that did not end cleanly");
    }
}
