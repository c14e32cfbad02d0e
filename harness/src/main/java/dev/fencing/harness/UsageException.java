package dev.fencing.harness;

/**
 * Settings a run cannot honour, found after the flags were parsed: an output file that cannot be written, a
 * platform without {@code kill -STOP}. {@link Cli#handled} ends a tool with it as with a bad flag: one sentence,
 * last, and exit {@value Cli#EXIT_USAGE}.
 */
public class UsageException extends HarnessException {
    private static final long serialVersionUID = 1L;

    public UsageException(String message) {
        super(message);
    }
}
