package dev.fencing.jdbc.internal;

import java.math.BigDecimal;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The checks of an {@code interval} key's spelling, among those of key values against their columns: signs that
 * the session's {@code IntervalStyle} decides and fractions that the cast rounds would name another row's key.
 * Each refusal's message starts with the subject its caller gives ({@code key K of T has the interval X for
 * column C}).
 */
final class IntervalKeys {
    private IntervalKeys() {}

    /**
     * Refuses {@code text}, a key for an {@code interval} column named by {@code subject}, that starts with a minus
     * sign and has a later field without one: the session's {@code IntervalStyle} decides what that field's sign is
     * ({@code '-1 day 2 hours'} is -1 day +2 hours by default, -1 day -2 hours under {@code sql_standard}), so a
     * connection where someone set another style names another row's key. An ISO 8601 duration ({@code P-1DT2H}) gives
     * each field its own sign, as does the text with a sign on every field.
     */
    static void requireSigned(String text, String subject) {
        Matcher field = INTERVAL_FIELD.matcher(text.replaceFirst("^[ \\t\\n\\r]*@?[ \\t\\n\\r]*", ""));
        if (!field.lookingAt() || !"-".equals(field.group(1))) {
            return;
        }
        while (field.find()) {
            if (field.group(1).isEmpty()) {
                throw new IllegalArgumentException(subject + ", whose leading minus sign the session's IntervalStyle"
                        + " applies to its unsigned fields or not (sql_standard does, postgres does not): it could"
                        + " name another row's key; give every field its sign ('-1 day +2 hours'), or an ISO 8601"
                        + " duration ('P-1DT2H')");
            }
        }
    }

    /**
     * Refuses {@code value}, a {@code PGInterval} key for an {@code interval} column named by {@code subject}, when the
     * session's {@code IntervalStyle} decides its signs: the driver sends it as text with a sign on its negative fields
     * only ({@code -1 years 2 hours}), and when the first is negative and no later one is, {@code sql_standard} applies
     * that minus sign to the later fields too (-1 year -2 hours, where the value and the default style say -1 year +2
     * hours). Unlike text ({@link #requireSigned}), an interval whose later nonzero fields are all negative too, or
     * that has a later negative field (which keeps the other fields' signs as they are in every style), is taken.
     */
    static void requireSignedDriverValue(Object value, String subject) {
        String text = value.toString();
        Matcher field = INTERVAL_FIELD.matcher(text);
        if (!field.find() || !"-".equals(field.group(1))) {
            return;
        }
        boolean laterSigned = false;
        boolean laterUnsigned = false;
        while (field.find()) {
            if (!field.group(1).isEmpty()) {
                laterSigned = true;
            } else if (field.group().matches(".*[1-9].*")) {
                laterUnsigned = true;
            }
        }
        if (laterUnsigned && !laterSigned) {
            throw new IllegalArgumentException(
                    subject + ", whose leading minus sign the session's IntervalStyle applies to"
                            + " its positive fields or not (sql_standard does, postgres does not): it could name another"
                            + " row's key; give it as text with every field signed ('-1 years +2 hours'), or as an ISO"
                            + " 8601 duration ('P-1YT2H')");
        }
    }

    /** The driver's interval type, {@code org.postgresql.util.PGInterval}, which this module does not depend on. */
    static boolean driverInterval(Object value) {
        for (Class<?> type = value.getClass(); type != null; type = type.getSuperclass()) {
            if ("org.postgresql.util.PGInterval".equals(type.getName())) {
                return true;
            }
        }
        return false;
    }

    /**
     * Refuses {@code text}, a key for an {@code interval} column named by {@code subject}, when it holds a fraction the
     * cast rounds: PostgreSQL keeps whole months and microseconds, so it rounds {@code '1.01 years'} (12.12 months) to
     * 1 year, {@code '1.0000004 seconds'} to 1 second and {@code '0.0005 ms'} to 1 microsecond, and the key names that
     * row. A fraction of a year, decade, century or millennium is taken when it is whole months; one of a millisecond
     * when it is whole microseconds; one of a microsecond never; any other with up to six decimals (a month, a day, an
     * hour or a second times six decimals is whole microseconds).
     */
    static void requireUnrounded(String text, String subject) {
        // an ISO 8601 duration's units are one letter each, and the next may follow at once (P1.5YT2H)
        boolean iso = text.strip().regionMatches(true, 0, "P", 0, 1);
        Matcher fraction = INTERVAL_FRACTION.matcher(text);
        while (fraction.find()) {
            BigDecimal part = new BigDecimal("0." + fraction.group(1));
            String unit = fraction.group(2).toLowerCase(java.util.Locale.ROOT);
            if (iso && !unit.isEmpty()) {
                unit = unit.substring(0, 1);
            }
            BigDecimal kept;
            if (unit.equals("y") || unit.startsWith("yr") || unit.startsWith("year")) {
                kept = part.multiply(BigDecimal.valueOf(12));
            } else if (unit.startsWith("dec")) {
                kept = part.multiply(BigDecimal.valueOf(120));
            } else if (unit.equals("c") || unit.startsWith("cent")) {
                kept = part.multiply(BigDecimal.valueOf(1200));
            } else if (unit.startsWith("mil") && !unit.startsWith("milli")) {
                kept = part.multiply(BigDecimal.valueOf(12000));
            } else if (unit.equals("ms") || unit.startsWith("msec") || unit.startsWith("milli")) {
                kept = part.movePointRight(3);
            } else if (unit.equals("us") || unit.startsWith("usec") || unit.startsWith("micro")) {
                kept = part;
            } else {
                kept = part.movePointRight(6);
            }
            if (kept.signum() != 0 && kept.stripTrailingZeros().scale() > 0) { // not whole
                throw new IllegalArgumentException(subject + ", whose fraction "
                        + fraction.group().strip() + " the cast"
                        + " would round (PostgreSQL keeps whole months and microseconds): it would name another"
                        + " row's key; give the interval in whole months and microseconds ('1 year 1 mon',"
                        + " '00:00:01.000001')");
            }
        }
    }

    /**
     * A fraction in an interval given as text, its digits (group 1) and the unit right after it (group 2, maybe
     * empty: a time's seconds, {@code 00:00:01.5}), as ISO 8601 writes it too ({@code P1.5Y}).
     */
    private static final Pattern INTERVAL_FRACTION = Pattern.compile("\\.(\\d+)[ \\t\\n\\r]*([A-Za-z]*)");

    /** A number of an interval given as text, with its sign if it has one ({@code -1}, {@code 2:00:00}, {@code 1.5}). */
    private static final Pattern INTERVAL_FIELD = Pattern.compile("([+-]?)\\d[\\d:.]*");
}
