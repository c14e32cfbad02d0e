package dev.fencing.harness;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Callable;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

class CliTest {
    @Command(name = "tool")
    static final class Tool implements Callable<Integer> {
        @Option(names = "--fail")
        String fail;

        @Override
        public Integer call() {
            if ("usage".equals(fail)) {
                throw new UsageException("--fail usage is not allowed here");
            }
            if ("run".equals(fail)) {
                throw new HarnessException("the run failed", new IOException("disk full"));
            }
            return Cli.EXIT_OK;
        }
    }

    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int run(String... args) {
        PrintStream out = new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);
        return Cli.handled(new CommandLine(new Tool()), "tool", out, new PrintStream(err, true, StandardCharsets.UTF_8))
                .execute(args);
    }

    private String lastLine() {
        String text = err.toString(StandardCharsets.UTF_8).strip();
        return text.substring(text.lastIndexOf('\n') + 1);
    }

    @Test
    void aBadFlagEndsWithOneLineNamingItAndExitsTwo() {
        assertThat(run("--nope")).isEqualTo(Cli.EXIT_USAGE);
        assertThat(err.toString(StandardCharsets.UTF_8)).contains("(--help lists every flag with its limits)");
        assertThat(lastLine()).startsWith("tool: ").contains("--nope");
    }

    @Test
    void whatTheToolCallsAUsageErrorExitsTwoAndAnyOtherFailureOneWithItsCause() {
        assertThat(run("--fail", "usage")).isEqualTo(Cli.EXIT_USAGE);
        assertThat(lastLine()).isEqualTo("tool: --fail usage is not allowed here");

        assertThat(run("--fail", "run")).isEqualTo(Cli.EXIT_FAILURE);
        assertThat(lastLine()).isEqualTo("tool: the run failed: disk full");

        assertThat(run()).isEqualTo(Cli.EXIT_OK);
    }
}
