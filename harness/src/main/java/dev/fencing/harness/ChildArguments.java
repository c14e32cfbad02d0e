package dev.fencing.harness;

import java.util.HashMap;
import java.util.Map;

/**
 * A child JVM's {@code key=value} arguments, as its coordinator passes them ({@link ChildJvm#start}). Immutable. A
 * malformed or missing argument is an {@link IllegalArgumentException} that names it.
 *
 * <pre>{@code
 * ChildArguments args = new ChildArguments(argv);
 * int worker = args.whole("worker");
 * }</pre>
 */
public final class ChildArguments {
    private final Map<String, String> values = new HashMap<>();

    public ChildArguments(String[] argv) {
        for (String arg : argv) {
            int eq = arg.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("argument must be key=value, got '" + arg + "'");
            }
            values.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
    }

    public String text(String key) {
        String value = values.get(key);
        if (value == null) {
            throw new IllegalArgumentException("argument " + key + "=... is missing");
        }
        return value;
    }

    public int whole(String key) {
        return Integer.parseInt(text(key));
    }

    public long wholeLong(String key) {
        return Long.parseLong(text(key));
    }
}
