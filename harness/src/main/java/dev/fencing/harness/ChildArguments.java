package dev.fencing.verify.client;

import java.util.HashMap;
import java.util.Map;

/** A child JVM's {@code key=value} arguments. */
final class Arguments {
    private final Map<String, String> values = new HashMap<>();

    Arguments(String[] argv) {
        for (String arg : argv) {
            int eq = arg.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("argument must be key=value, got '" + arg + "'");
            }
            values.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
    }

    String text(String key) {
        String value = values.get(key);
        if (value == null) {
            throw new IllegalArgumentException("argument " + key + "=... is missing");
        }
        return value;
    }

    int whole(String key) {
        return Integer.parseInt(text(key));
    }

    long wholeLong(String key) {
        return Long.parseLong(text(key));
    }
}
