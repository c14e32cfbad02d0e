package dev.fencing.jdbc.internal;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;

/**
 * SQL identifiers: validated against a strict pattern and then quoted anyway, so that no text from a
 * caller reaches a statement unchecked.
 */
public final class Identifiers {
    /** What PostgreSQL stores for an unquoted name: lower case, at most 63 bytes. */
    public static final Pattern PATTERN = Pattern.compile("[a-z_][a-z0-9_]{0,62}");

    /** Identifiers already checked (column names go through here on every update); bounded. */
    private static final int MAX_CHECKED = 10_000;

    private static final Set<String> CHECKED = ConcurrentHashMap.newKeySet();

    private Identifiers() {}

    /** @throws IllegalArgumentException naming the bad value when it does not match {@link #PATTERN} */
    public static String require(String what, String identifier) {
        if (identifier == null) {
            throw new IllegalArgumentException(what + " must not be null");
        }
        if (CHECKED.contains(identifier)) {
            return identifier;
        }
        if (!PATTERN.matcher(identifier).matches()) {
            throw new IllegalArgumentException(what + " '" + identifier
                    + "' is not a valid identifier: use lower-case letters, digits and underscores, starting"
                    + " with a letter or underscore, at most 63 characters");
        }
        if (CHECKED.size() < MAX_CHECKED) {
            CHECKED.add(identifier);
        }
        return identifier;
    }

    /** Double-quotes a validated identifier. */
    public static String quote(String identifier) {
        return '"' + require("identifier", identifier) + '"';
    }
}
