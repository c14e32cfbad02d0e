package dev.fencing.jdbc.internal;

import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Named parameters in SQL fragments that callers write (expressions and predicates). */
public final class Bindings {
    /** Names the library binds itself start with this prefix; callers may not use it. */
    public static final String RESERVED_PREFIX = "fence_";

    private static final Pattern NAME = Pattern.compile("[A-Za-z][A-Za-z0-9_]{0,62}");
    // ':name' but not the '::type' cast; Jdbi's own parser makes the same distinction.
    private static final Pattern REFERENCE = Pattern.compile("(?<![:A-Za-z0-9_]):([A-Za-z][A-Za-z0-9_]*)");

    /**
     * Fragments and names already checked. They are constants in the caller's code, built into every update,
     * so each is checked once; bounded so that a caller building endless distinct fragments cannot grow it
     * without end (past the bound they are checked every time).
     */
    private static final int MAX_CHECKED = 1_000;

    private static final ConcurrentMap<String, Set<String>> CHECKED_FRAGMENTS = new ConcurrentHashMap<>();
    private static final Set<String> CHECKED_NAMES = ConcurrentHashMap.newKeySet();

    private Bindings() {}

    public static String requireName(String name) {
        if (name != null && CHECKED_NAMES.contains(name)) {
            return name;
        }
        if (name == null || !NAME.matcher(name).matches()) {
            throw new IllegalArgumentException("bind name '" + name + "' must match " + NAME.pattern());
        }
        if (name.startsWith(RESERVED_PREFIX)) {
            throw new IllegalArgumentException(
                    "bind name '" + name + "' starts with '" + RESERVED_PREFIX + "', which fenced-jdbc reserves");
        }
        if (CHECKED_NAMES.size() < MAX_CHECKED) {
            CHECKED_NAMES.add(name);
        }
        return name;
    }

    /**
     * Checks a caller's SQL fragment: not blank, one statement's worth (no semicolon, no comment), and
     * returns the named parameters it refers to.
     */
    public static Set<String> referencedNames(String what, String fragment) {
        Set<String> checked = fragment == null ? null : CHECKED_FRAGMENTS.get(fragment);
        if (checked != null) {
            return checked;
        }
        if (fragment == null || fragment.isBlank()) {
            throw new IllegalArgumentException(what + " must not be blank");
        }
        if (fragment.contains(";") || fragment.contains("--") || fragment.contains("/*")) {
            throw new IllegalArgumentException(what + " '" + fragment
                    + "' must be a single SQL expression without ';' or comments; pass values with bind()");
        }
        requireBalanced(what, fragment);
        Set<String> names = new LinkedHashSet<>();
        Matcher matcher = REFERENCE.matcher(fragment);
        while (matcher.find()) {
            names.add(matcher.group(1));
        }
        Set<String> result = Collections.unmodifiableSet(names);
        if (CHECKED_FRAGMENTS.size() < MAX_CHECKED) {
            CHECKED_FRAGMENTS.putIfAbsent(fragment, result);
        }
        return result;
    }

    /**
     * Refuses a fragment whose parentheses (outside quoted strings and identifiers) do not balance, or
     * that leaves a quote open: such a fragment can close the library's own parentheses and escape the
     * fence condition, as in {@code stock >= :qty) OR (true}.
     */
    static void requireBalanced(String what, String fragment) {
        int depth = 0;
        char quote = 0;
        for (int i = 0; i < fragment.length(); i++) {
            char c = fragment.charAt(i);
            if (quote != 0) {
                if (c == quote) {
                    quote = 0; // a doubled quote ('' or "") closes and reopens: same result
                }
            } else if (c == '\'' || c == '"') {
                quote = c;
            } else if (c == '(') {
                depth++;
            } else if (c == ')' && --depth < 0) {
                break;
            }
        }
        if (depth != 0 || quote != 0) {
            throw new IllegalArgumentException(what + " '" + fragment
                    + "' has unbalanced parentheses or an unclosed quote; it must be one self-contained expression");
        }
    }
}
