package dev.fencing.harness;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PreflightTest {
    @TempDir
    Path directory;

    @Test
    void runsOnLinuxAndMacOsAndSaysWhyNotElsewhere() {
        assertThatCode(() -> Preflight.checkPlatform("demo-inventory", "Linux")).doesNotThrowAnyException();
        assertThatCode(() -> Preflight.checkPlatform("demo-inventory", "Mac OS X"))
                .doesNotThrowAnyException();
        assertThatThrownBy(() -> Preflight.checkPlatform("demo-inventory", "Windows 11"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("demo-inventory runs on Linux and macOS only, not on Windows 11: it freezes worker JVMs"
                        + " with kill -STOP and needs a POSIX shell (sh) to resume them");
    }

    @Test
    void acceptsANewOrWritableFileInAnExistingDirectory() throws IOException {
        assertThatCode(() -> Preflight.checkOutput("--json", directory.resolve("new.json")))
                .doesNotThrowAnyException();
        Path existing = Files.writeString(directory.resolve("old.json"), "{}");
        assertThatCode(() -> Preflight.checkOutput("--json", existing)).doesNotThrowAnyException();
    }

    @Test
    void refusesAMissingDirectoryWithoutCreatingIt() {
        Path file = directory.resolve("missing/sub/out.json");

        assertThatThrownBy(() -> Preflight.checkOutput("--json", file))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("--json " + file + ": directory " + file.getParent()
                        + " does not exist; create it first or choose another file");
        assertThat(directory.resolve("missing")).doesNotExist();
    }

    @Test
    void refusesADirectoryGivenAsTheFile() {
        assertThatThrownBy(() -> Preflight.checkOutput("--html", directory))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("--html " + directory + " is a directory; name a file");
    }
}
