package dev.fencing.harness;

import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import picocli.CommandLine;
import picocli.CommandLine.ParameterException;

/**
 * How the tools' command lines end: every failure with one line, last, where a terminal leaves the eye, naming
 * the tool ({@code demo-inventory: ...}), and an exit code a script can test. Stateless and thread-safe.
 *
 * <pre>{@code
 * CommandLine commandLine = Cli.handled(new CommandLine(command), "verify", out, err);
 * return commandLine.execute(args);
 * }</pre>
 */
public final class Cli {
    /** The run passed. */
    public static final int EXIT_OK = 0;
    /** The run failed, proved nothing, or could not complete. */
    public static final int EXIT_FAILURE = 1;
    /** Bad flags, or settings the servers cannot honour. */
    public static final int EXIT_USAGE = 2;

    private Cli() {}

    /**
     * Sends {@code commandLine}'s output to {@code out} and {@code err}; a bad flag (picocli's {@link
     * ParameterException}, or a {@link UsageException}) ends with a hint to {@code --help} and the one
     * sentence naming the flag, exit {@value #EXIT_USAGE}; any other failure with its message and its causes',
     * exit {@value #EXIT_FAILURE}.
     */
    public static CommandLine handled(CommandLine commandLine, String tool, PrintStream out, PrintStream err) {
        return commandLine
                .setOut(new PrintWriter(out, true, StandardCharsets.UTF_8))
                .setErr(new PrintWriter(err, true, StandardCharsets.UTF_8))
                .setParameterExceptionHandler((e, args) -> usageError(e.getCommandLine(), tool, e.getMessage()))
                .setExecutionExceptionHandler((e, cmd, parsed) -> {
                    if (e instanceof ParameterException || e instanceof UsageException) {
                        return usageError(cmd, tool, e.getMessage());
                    }
                    cmd.getErr().println(tool + ": " + message(e));
                    return EXIT_FAILURE;
                });
    }

    /**
     * A command line for {@code command} whose converters speak plainly (picocli's say "is not a long"): {@code
     * wholeNumberExample} as {@link WholeNumbers#register} takes it, and durations in the tool's words.
     */
    public static CommandLine commandLine(Object command, long wholeNumberExample, Durations durations) {
        CommandLine commandLine = new CommandLine(command);
        WholeNumbers.register(commandLine, wholeNumberExample);
        commandLine.registerConverter(Duration.class, durations);
        return commandLine;
    }

    /** The one line that matters goes last; the full usage is one flag away. Returns {@value #EXIT_USAGE}. */
    private static int usageError(CommandLine cmd, String tool, String message) {
        cmd.getErr().println("(--help lists every flag with its limits)");
        cmd.getErr().println(tool + ": " + message);
        return EXIT_USAGE;
    }

    /** {@code e}'s message followed by each cause's that it does not already contain. */
    public static String message(Throwable e) {
        StringBuilder message = new StringBuilder(String.valueOf(e.getMessage()));
        for (Throwable cause = e.getCause(); cause != null && cause != cause.getCause(); cause = cause.getCause()) {
            if (cause.getMessage() != null && !message.toString().contains(cause.getMessage())) {
                message.append(": ").append(cause.getMessage());
            }
        }
        return message.toString();
    }

    /**
     * Writes a report named by {@code flag}.
     *
     * @throws HarnessException naming the flag and the file when it cannot be written
     */
    public static void write(String flag, Path file, String content) {
        try {
            Files.writeString(file, content, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new HarnessException("cannot write " + flag + " " + file + ": " + e, e);
        }
    }
}
