package dev.fencing.jdbc.internal;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.regex.Pattern;

/** Named parameters in SQL fragments that callers write (expressions and predicates). */
public final class Bindings {
    /** Names the library binds itself start with this prefix; callers may not use it. */
    public static final String RESERVED_PREFIX = "fence_";

    private static final Pattern NAME = Pattern.compile("[A-Za-z][A-Za-z0-9_]{0,62}");

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
                    "bind name '" + name + "' starts with '" + RESERVED_PREFIX + "', which fencing-jdbc reserves");
        }
        if (CHECKED_NAMES.size() < MAX_CHECKED) {
            CHECKED_NAMES.add(name);
        }
        return name;
    }

    /**
     * Checks a caller's SQL fragment with {@link SqlFragment#check} (one self-contained expression, read as
     * PostgreSQL reads it) and returns the named parameters it refers to.
     */
    public static Set<String> referencedNames(String what, String fragment) {
        Set<String> checked = fragment == null ? null : CHECKED_FRAGMENTS.get(fragment);
        if (checked != null) {
            return checked;
        }
        Set<String> result = SqlFragment.check(what, fragment);
        if (CHECKED_FRAGMENTS.size() < MAX_CHECKED) {
            CHECKED_FRAGMENTS.putIfAbsent(fragment, result);
        }
        return result;
    }
}
