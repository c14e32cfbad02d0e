package dev.fencing.harness;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * Checks made before any server starts, so that a run of a minute or more does not end on something that was
 * wrong from the start. Each failure is an {@link IllegalArgumentException} whose message is one sentence naming
 * the flag (or the platform) and the reason; the tools turn it into a usage error. Stateless and thread-safe.
 */
public final class Preflight {
    private Preflight() {}

    /**
     * The harness freezes child JVMs with {@code kill -STOP} and runs small POSIX {@code sh} scripts (resumers, a
     * watchdog): Linux and macOS have both; other systems stop here.
     *
     * @param tool the tool's name, for the message
     * @param osName the value of {@code os.name}
     */
    public static void checkPlatform(String tool, String osName) {
        String name = osName == null ? "" : osName.toLowerCase(Locale.ROOT);
        if (!name.contains("linux") && !name.contains("mac")) {
            throw new IllegalArgumentException(tool + " runs on Linux and macOS only, not on " + osName
                    + ": it freezes worker JVMs with kill -STOP and needs a POSIX shell (sh) to resume them");
        }
    }

    /**
     * {@code file} can be written: its directory exists and is writable, and the file, if it exists, is a
     * writable regular file. Nothing is created.
     */
    public static void checkOutput(String flag, Path file) {
        Path absolute = file.toAbsolutePath().normalize();
        Path directory = absolute.getParent();
        if (directory == null || !Files.isDirectory(directory)) {
            throw new IllegalArgumentException(flag + " " + file + ": directory " + directory
                    + " does not exist; create it first or choose another file");
        }
        if (Files.isDirectory(absolute)) {
            throw new IllegalArgumentException(flag + " " + file + " is a directory; name a file");
        }
        if (Files.exists(absolute)) {
            if (!Files.isRegularFile(absolute) || !Files.isWritable(absolute)) {
                throw new IllegalArgumentException(
                        flag + " " + file + " exists and cannot be overwritten (not a writable regular file)");
            }
        } else if (!Files.isWritable(directory)) {
            throw new IllegalArgumentException(
                    flag + " " + file + ": directory " + directory + " is not writable by this user");
        }
    }
}
