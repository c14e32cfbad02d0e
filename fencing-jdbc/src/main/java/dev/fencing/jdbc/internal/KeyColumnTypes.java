package dev.fencing.jdbc.internal;

import dev.fencing.jdbc.RowKey;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.OffsetTime;
import java.time.ZonedDateTime;
import java.time.temporal.ChronoField;
import java.time.temporal.TemporalAccessor;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The checks of a fenced table's key values against its key columns' types: a value that the statements' cast
 * to the column's type, or the column itself, would round, cut or read as another value (another row's key) is
 * refused, naming the value and its column. Immutable and thread-safe.
 */
public final class KeyColumnTypes {
    private static final Set<String> WHOLE_NUMBERS = Set.of("smallint", "integer", "bigint");
    private static final Set<String> TIMES = Set.of(
            "timestamp without time zone", "timestamp with time zone", "time without time zone", "time with time zone");
    /**
     * The text types a key column may be (a domain over one too), whose keys are given as text; citext also by
     * its schema's name ({@code ext.citext}), as a type off the search path is named.
     */
    private static final Set<String> TEXTS = Set.of("text", "character varying", "bpchar", "citext", "name");

    private static final Set<String> LOCAL_TIMES =
            Set.of("timestamp without time zone", "date", "time without time zone");

    /** The table, {@code schema.table}, as the messages name it. */
    private final String table;

    private final List<String> keyColumns;
    /** Each column's base type, for messages. */
    private final Map<String, String> columnTypes;
    /** Each key column's type, a domain resolved to the type under it: what a key value's checks compare. */
    private final Map<String, String> keyUnderlyingTypes;
    /**
     * The fractional digits each key column, in key order, keeps where its type modifier keeps fewer than the
     * statements' cast (null elsewhere)
     * ({@code numeric(5,2)}: 2; {@code timestamp(3)}: 3): assigning a key to the column, as an upsert's
     * insert does, rounds it there, and its ON CONFLICT then finds the row of the rounded key.
     */
    private final Integer[] keyScaleAt;
    /**
     * The characters each key column, in key order, keeps where it is a domain over {@code varchar(n)} or {@code
     * char(n)} (null elsewhere): the statements cast a key to the domain, and that cast cuts a longer text to
     * them, as an explicit cast to the type under it does, without an error. Also where it is {@code varchar(n)}
     * itself: the statements cast to {@code varchar} without the length, but an upsert's insert assigns the key to
     * the column, which cuts spaces past the length without an error.
     */
    private final Integer[] keyLengthAt;
    /** Whether each key column, in key order, is boolean (a domain over it too): it takes no number as a key. */
    private final boolean[] booleanKeys;

    /**
     * @param table the table as messages name it ({@code schema.table})
     * @param columnTypes every column's base type (for messages)
     * @param underlying each column's type, a domain resolved to the type under it
     * @param keyScales the fractional digits a key column keeps, where {@link #scale} found fewer than a cast
     * @param keyLengths the characters a key column's domain over {@code varchar(n)} or {@code char(n)}, or a
     *     {@code varchar(n)} key column, keeps
     */
    public KeyColumnTypes(
            String table,
            List<String> keyColumns,
            Map<String, String> columnTypes,
            Map<String, String> underlying,
            Map<String, Integer> keyScales,
            Map<String, Integer> keyLengths) {
        this.table = table;
        this.keyColumns = List.copyOf(keyColumns);
        this.columnTypes = Map.copyOf(columnTypes);
        this.keyUnderlyingTypes = keyUnderlying(this.keyColumns, underlying);
        this.keyScaleAt = new Integer[this.keyColumns.size()];
        for (int i = 0; i < keyScaleAt.length; i++) {
            keyScaleAt[i] = keyScales.get(this.keyColumns.get(i));
        }
        this.keyLengthAt = new Integer[this.keyColumns.size()];
        for (int i = 0; i < keyLengthAt.length; i++) {
            keyLengthAt[i] = keyLengths.get(this.keyColumns.get(i));
        }
        this.booleanKeys = new boolean[this.keyColumns.size()];
        for (int i = 0; i < booleanKeys.length; i++) {
            booleanKeys[i] = "boolean".equals(keyUnderlyingTypes.get(this.keyColumns.get(i)));
        }
    }

    /** See {@code FencedTable#requireKey}. */
    public RowKey requireKey(RowKey key) {
        Objects.requireNonNull(key, "key");
        if (key.size() != keyColumns.size()) {
            throw new IllegalArgumentException(
                    "key " + key + " has " + key.size() + " values but " + table + " is keyed by " + keyColumns);
        }
        for (int i = 0; i < key.size(); i++) {
            Object value = key.values().get(i);
            if (value instanceof CharSequence text) {
                Utf8Text.requireEncodable(text, "key " + key + " of " + table + " for column " + keyColumns.get(i));
            }
            if (keyScaleAt[i] != null) {
                requireKept(key, i, value, keyScaleAt[i]);
            }
            if (keyLengthAt[i] != null) {
                requireFits(key, i, value, keyLengthAt[i]);
            }
            if (value instanceof String text
                    && TIMES.contains(keyUnderlyingTypes.get(keyColumns.get(i)))
                    && textFinerThan(text, 6)) {
                // as for a java.time value below: the cast would round it onto another row's key
                throw new IllegalArgumentException("key " + key + " of " + table + " has a time value "
                        + value + " for column " + keyColumns.get(i) + " finer than the microseconds PostgreSQL"
                        + " keeps; it would round to another row's key");
            }
            requireNoDroppedPart(key, i, value);
            requireFourDigitYear(key, i, value);
            if (value instanceof CharSequence text) {
                requireIsoText(key, i, text.toString());
                requireSignedInterval(key, i, text.toString());
                requireUnroundedInterval(key, i, text.toString());
            }
            if (value instanceof String || (value instanceof Long || value instanceof Integer) && !booleanKeys[i]) {
                continue;
            }
            String column = keyColumns.get(i);
            String type = keyUnderlyingTypes.get(column);
            if (value instanceof Number && booleanKeys[i]) {
                // an integer casts to boolean as zero or not: 2 would name the row true
                throw new IllegalArgumentException("key " + key + " of " + table + " has the number " + value
                        + " for column " + column + " (" + type + "), which the cast to boolean would read as "
                        + (value instanceof Integer && (Integer) value == 0 ? "false" : "true (any number but 0)")
                        + "; give a Boolean");
            }
            if ((TEXTS.contains(type) || type.endsWith(".citext"))
                    && (value instanceof BigDecimal
                            || value instanceof TemporalAccessor
                            || value instanceof java.util.Date)) {
                // a single-row write sends it as a number or time, which the cast spells as PostgreSQL does; a
                // batch sends Java's spelling (1E+2 and 100, 2026-01-02T10:00 and 2026-01-02 10:00:00)
                throw new IllegalArgumentException("key " + key + " of " + table + " has the "
                        + value.getClass().getSimpleName() + " " + value + " for column " + column + " (" + type
                        + "), which holds text: a single-row write sends it as what it is and the cast spells it as"
                        + " PostgreSQL does (1E+2 as 100, 10:00 as 10:00:00, a moment in the session's TimeZone),"
                        + " a batch as Java does, and the two would name different rows; give the key's text as a"
                        + " String");
            }
            if (value instanceof Boolean && "integer".equals(type)) {
                // a single-row write sends it as a boolean, which the cast to integer reads as 1 or 0; a batch's
                // text 'true' is no integer
                throw new IllegalArgumentException("key " + key + " of " + table + " has the Boolean " + value
                        + " for column " + column + " (" + type + "), which the cast to integer would read as "
                        + ((Boolean) value ? "1" : "0") + ", another row's key; give an Integer or a Long");
            }
            if (finerThan(value, 6)) {
                // PostgreSQL keeps microseconds: the cast would round the value and name another row
                throw new IllegalArgumentException("key " + key + " of " + table + " has a time value "
                        + value + " finer than the microseconds PostgreSQL keeps; it would round to another row's"
                        + " key");
            }
            if (value instanceof Double || value instanceof Float) {
                // a binary fraction: 0.1 + 0.2 reaches a numeric column as 0.3, 7.5 a bigint one as 8
                throw new IllegalArgumentException("key " + key + " of " + table + " has a floating-point"
                        + " value " + value + " for column " + column + " (" + type + "), which the cast to the"
                        + " column's type may round to another row's key; give a Long, a BigDecimal or a String");
            }
            if (value instanceof BigDecimal decimal && WHOLE_NUMBERS.contains(type) && decimalsBeyond(decimal, 0)) {
                throw new IllegalArgumentException("key " + key + " of " + table + " has the fractional"
                        + " value " + value + " for column " + column + " (" + type + "), which no row's key can"
                        + " be; the cast would round it to another row's key");
            }
            if ((value instanceof OffsetDateTime || value instanceof ZonedDateTime || value instanceof Instant)
                    && LOCAL_TIMES.contains(type)) {
                // a moment against a local time: which one depends on the session's time zone, and a batch
                // (sent as text, the offset dropped) and a single-row write (converted) would name different rows
                throw new IllegalArgumentException("key " + key + " of " + table + " has the moment "
                        + value + " for column " + column + " (" + type + "), which holds local times: which row"
                        + " it names depends on the session's time zone; give a LocalDateTime, LocalDate or"
                        + " LocalTime");
            }
            if ("interval".equals(type) && IntervalKeys.driverInterval(value)) {
                requireSignedDriverInterval(key, i, value);
            }
            if (value instanceof OffsetTime && "time without time zone".equals(type)) {
                // the cast drops the offset (10:00+05 names row 10:00), as it would an OffsetDateTime's for a
                // timestamp column, which is refused above
                throw new IllegalArgumentException("key " + key + " of " + table + " has the time with offset "
                        + value + " for column " + column + " (" + type + "), which holds local times: the cast"
                        + " drops the offset and names the row of the time of day alone, which is not the time the"
                        + " value names; give a LocalTime");
            }
            if ((value instanceof LocalDateTime || value instanceof LocalDate)
                            && "timestamp with time zone".equals(type)
                    || value instanceof LocalTime && "time with time zone".equals(type)) {
                // a local time against a column of instants: the cast reads it in the session's TimeZone, which
                // whoever held the pooled connection before may have set to another
                throw new IllegalArgumentException("key " + key + " of " + table + " has the local "
                        + (value instanceof LocalDate ? "date " : "time ") + value + " for column " + column + " ("
                        + type + "), which holds instants: the cast reads it in the session's TimeZone, and a"
                        + " connection whose TimeZone someone set to another names another row; give "
                        + ("time with time zone".equals(type) ? "an OffsetTime" : "an OffsetDateTime or Instant"));
            }
        }
        return key;
    }

    /**
     * Refuses key value {@code i} when the cast to its date or time-of-day column would drop part of it: a time
     * of day given for a {@code date} column (a {@code LocalDateTime} or {@code Timestamp} past midnight, or text
     * that spells a time, {@link #TEXT_TIME}), or a date given for a {@code time} or {@code time with time zone}
     * column (a {@code LocalDateTime}, a moment, a {@code java.util.Date} other than {@code java.sql.Time}, or
     * text that spells a date, {@link #TEXT_DATE}); text longer than {@link #NAME_BYTES} bytes for a {@code
     * name} column, and anything but a text of one byte for a {@code "char"} column. The cast reads {@code
     * 2026-01-01T10:00} as the date {@code
     * 2026-01-01}, or as the time {@code 10:00}, and the key names that row, which is not the key given.
     */
    private void requireNoDroppedPart(RowKey key, int i, Object value) {
        String column = keyColumns.get(i);
        String type = keyUnderlyingTypes.get(column);
        String dropped = null;
        if ("date".equals(type)) {
            if (value instanceof String text ? TEXT_TIME.matcher(text).find() : !midnight(value)) {
                dropped = "time of day";
            }
        } else if ("time without time zone".equals(type) || "time with time zone".equals(type)) {
            if (value instanceof String text
                    ? TEXT_DATE.matcher(text).find()
                    : value instanceof LocalDateTime
                            || value instanceof OffsetDateTime
                            || value instanceof ZonedDateTime
                            || value instanceof Instant
                            || value instanceof java.util.Date && !(value instanceof java.sql.Time)) {
                dropped = "date";
            }
        }
        if ("name".equals(type)
                && value instanceof CharSequence text
                && text.toString().getBytes(StandardCharsets.UTF_8).length > NAME_BYTES) {
            throw new IllegalArgumentException("key " + key + " of " + table + " has the value " + value
                    + " for column " + column + " (" + type + "), longer than the " + NAME_BYTES + " bytes the type"
                    + " keeps: the cast cuts it, and it would name another row's key");
        }
        if ("\"char\"".equals(type)
                && !(value instanceof CharSequence text
                        && text.toString().getBytes(StandardCharsets.UTF_8).length <= 1)) {
            // the single-byte "char": the cast keeps a text's first byte, and reads an int as that byte's code
            throw new IllegalArgumentException("key " + key + " of " + table + " has the value " + value
                    + " for column " + column + " (" + type + "), which keeps one byte: the cast keeps only the"
                    + " first byte of a longer text, and reads a number as a byte's code, so it would name another"
                    + " row's key; give a String of one byte");
        }
        if (dropped != null) {
            throw new IllegalArgumentException("key " + key + " of " + table + " has the value " + value
                    + " for column " + column + " (" + type + "), whose " + dropped + " the cast to the column's type"
                    + " drops: it would name another row's key; give the "
                    + ("date".equals(type) ? "date" : "time of day")
                    + " alone");
        }
    }

    /**
     * Refuses key value {@code i}, a {@code java.time} date or moment, outside the years 1 to 9999 (an {@code
     * Instant}'s in UTC). A single-row write sends it in the driver's spelling, a batch in Java's, and the two
     * name different rows: the driver sends year 0 as {@code 0001-01-01 BC} and -44 as {@code 0045-03-15 BC}, a
     * date before 4713 BC as {@code -infinity} and {@code LocalDate.MAX} as {@code infinity}, where PostgreSQL
     * refuses Java's {@code 0000-01-01}, {@code -0044-03-15} and {@code +10000-01-01}.
     */
    private void requireFourDigitYear(RowKey key, int i, Object value) {
        boolean outside;
        if (value instanceof Instant instant) {
            outside = instant.isBefore(FIRST_INSTANT) || !instant.isBefore(PAST_LAST_INSTANT);
        } else if (value instanceof LocalDate
                || value instanceof LocalDateTime
                || value instanceof OffsetDateTime
                || value instanceof ZonedDateTime) {
            int year = ((TemporalAccessor) value).get(ChronoField.YEAR);
            outside = year < 1 || year > 9999;
        } else {
            return;
        }
        if (outside) {
            String column = keyColumns.get(i);
            throw new IllegalArgumentException("key " + key + " of " + table + " has the date " + value
                    + " for column " + column + " (" + keyUnderlyingTypes.get(column) + "), outside the years 1 to"
                    + " 9999: the driver sends it to a single-row write in another spelling than a batch does (year"
                    + " 0 as 1 BC, a date before 4713 BC as -infinity), and the two would name different rows");
        }
    }

    private static final Instant FIRST_INSTANT = Instant.parse("0001-01-01T00:00:00Z");
    private static final Instant PAST_LAST_INSTANT = Instant.parse("+10000-01-01T00:00:00Z");

    /**
     * Refuses key value {@code i}, text for a date or time column, unless it spells the column's value in ISO 8601
     * ({@link #ISO_TEXT}): with an offset for a column of instants, without one for a column of local times, no
     * other field. PostgreSQL reads many other spellings, and some by the session's settings or the clock: {@code
     * '01/02/2026'} by {@code DateStyle} (January 2, or February 1), a time without offset by {@code TimeZone},
     * {@code 'IST'} by {@code timezone_abbreviations}, {@code 'today'} and {@code 'now'} by the time of the cast; and
     * it drops or rolls over parts that the writer's other checks do not find ({@code '20260101 1000'} for a date,
     * {@code 'J2451187 10:00'} for a time, the offset of {@code '2026-01-01 10:00+05'} for a timestamp, {@code
     * 23:59:60} to the next day): each would name another row's key than the text says.
     */
    private void requireIsoText(RowKey key, int i, String text) {
        String column = keyColumns.get(i);
        String type = keyUnderlyingTypes.get(column);
        Pattern iso = ISO_TEXT.get(type);
        if (iso != null && !iso.matcher(text).matches()) {
            throw new IllegalArgumentException("key " + key + " of " + table + " has the text " + text
                    + " for column " + column + " (" + type + "), which is not " + ISO_FORM.get(type) + ": PostgreSQL"
                    + " reads other spellings by the session's DateStyle, TimeZone or timezone_abbreviations or by"
                    + " the clock, or drops part of them, and it could name another row's key; give it so, or as "
                    + JAVA_TIME.get(type));
        }
    }

    /** Refuses key value {@code i}, text for an {@code interval} column, as {@link IntervalKeys#requireSigned}. */
    private void requireSignedInterval(RowKey key, int i, String text) {
        String column = keyColumns.get(i);
        if ("interval".equals(keyUnderlyingTypes.get(column))) {
            IntervalKeys.requireSigned(text, intervalKey(key, "interval " + text, column));
        }
    }

    /** Refuses key value {@code i}, a {@code PGInterval}, as {@link IntervalKeys#requireSignedDriverValue}. */
    private void requireSignedDriverInterval(RowKey key, int i, Object value) {
        IntervalKeys.requireSignedDriverValue(value, intervalKey(key, "PGInterval " + value, keyColumns.get(i)));
    }

    /** Refuses key value {@code i}, text for an {@code interval} column, as {@link IntervalKeys#requireUnrounded}. */
    private void requireUnroundedInterval(RowKey key, int i, String text) {
        String column = keyColumns.get(i);
        if ("interval".equals(keyUnderlyingTypes.get(column))) {
            IntervalKeys.requireUnrounded(text, intervalKey(key, "interval " + text, column));
        }
    }

    /** How a refusal of an interval key names it: {@code key K of T has the interval X for column C}. */
    private String intervalKey(RowKey key, String value, String column) {
        return "key " + key + " of " + table + " has the " + value + " for column " + column;
    }

    private static final String ISO_DATE = "\\d{4}-\\d{2}-\\d{2}";
    private static final String ISO_TIME = "(?:[01]\\d|2[0-3]):[0-5]\\d(?::[0-5]\\d(?:\\.\\d+)?)?";
    /** Also 24:00, a value of its own for a time of day (the next day's midnight for a timestamp). */
    private static final String ISO_TIME_OF_DAY = "(?:" + ISO_TIME + "|24:00(?::00(?:\\.0+)?)?)";

    private static final String ISO_OFFSET = " ?(?:Z|[+-]\\d{2}(?::?\\d{2}(?::?\\d{2})?)?)";
    private static final String INFINITY = "|-?infinity";

    /** Per date or time type, the text keys it takes (blanks around them aside, which the cast ignores). */
    private static final Map<String, Pattern> ISO_TEXT = Map.of(
            "date", iso(ISO_DATE + INFINITY),
            "timestamp without time zone", iso(ISO_DATE + "(?:[ T]" + ISO_TIME + ")?" + INFINITY),
            "timestamp with time zone", iso(ISO_DATE + "[ T]" + ISO_TIME + ISO_OFFSET + INFINITY),
            "time without time zone", iso(ISO_TIME_OF_DAY),
            "time with time zone", iso(ISO_TIME_OF_DAY + ISO_OFFSET));

    private static final Map<String, String> ISO_FORM = Map.of(
            "date", "yyyy-mm-dd",
            "timestamp without time zone", "yyyy-mm-dd hh:mm[:ss[.f]] without offset",
            "timestamp with time zone", "yyyy-mm-dd hh:mm[:ss[.f]] with an offset (Z, +hh[:mm])",
            "time without time zone", "hh:mm[:ss[.f]] without offset",
            "time with time zone", "hh:mm[:ss[.f]] with an offset (Z, +hh[:mm])");

    private static final Map<String, String> JAVA_TIME = Map.of(
            "date", "a LocalDate",
            "timestamp without time zone", "a LocalDateTime",
            "timestamp with time zone", "an OffsetDateTime or Instant",
            "time without time zone", "a LocalTime",
            "time with time zone", "an OffsetTime");

    private static Pattern iso(String forms) {
        return Pattern.compile("[ \\t\\n\\r]*(?:" + forms + ")[ \\t\\n\\r]*");
    }

    /**
     * The bytes a {@code name} keeps (NAMEDATALEN - 1 of a PostgreSQL built with the default): the cast of a
     * longer text to {@code name} cuts it, without an error.
     */
    private static final int NAME_BYTES = 63;

    /** A time of day as PostgreSQL reads one in a date given as text: {@code hh:mm}, or ISO 8601's {@code T}. */
    private static final Pattern TEXT_TIME = Pattern.compile("\\d:\\d|\\d[Tt]\\d");

    /**
     * A date as PostgreSQL reads one in a time of day given as text: three numbers joined by {@code -}, {@code /}
     * or {@code .} ({@code 2026-01-01}, {@code 1/2/2026}, {@code 2026.01.02}) whose first does not continue a time
     * ({@code 10:00:00.5-05} is a time with a zone), or ISO 8601's basic {@code 20260101T}.
     */
    private static final Pattern TEXT_DATE =
            Pattern.compile("(?<![:.\\d])\\d{1,4}[-/.]\\d{1,2}[-/.]\\d{1,4}|\\d{8}[Tt]");

    /** Whether a value given for a date column has no time of day past midnight (a value without one has none). */
    private static boolean midnight(Object value) {
        if (value instanceof LocalDateTime time) {
            return time.toLocalTime().equals(LocalTime.MIDNIGHT);
        }
        if (value instanceof java.sql.Timestamp timestamp) {
            return midnight(timestamp.toLocalDateTime());
        }
        if (value instanceof java.util.Date date && !(value instanceof java.sql.Date)) {
            // bound as a Timestamp of the same instant, read in the JVM's time zone
            return midnight(new java.sql.Timestamp(date.getTime()).toLocalDateTime());
        }
        return true;
    }

    /**
     * Key value {@code i} of a key {@link #requireKey} accepted, as a batch sends it: as text that PostgreSQL
     * reads into the key column's type. A whole-valued {@code BigDecimal} for a whole-number column travels as
     * its integer: PostgreSQL reads its text ({@code 7.00}, {@code 7E+1}) as no {@code bigint}, where the
     * single-row write's {@code numeric} casts to one.
     */
    public Object batchKeyValue(int i, Object value) {
        if (value instanceof BigDecimal decimal && WHOLE_NUMBERS.contains(keyUnderlyingTypes.get(keyColumns.get(i)))) {
            return decimal.toBigIntegerExact();
        }
        return value;
    }

    private static Map<String, String> keyUnderlying(List<String> keyColumns, Map<String, String> underlying) {
        Map<String, String> keys = new HashMap<>();
        for (String key : keyColumns) {
            keys.put(key, Objects.requireNonNullElse(underlying.get(key), ""));
        }
        return Map.copyOf(keys);
    }

    /**
     * Refuses key value {@code i} when its column, which keeps {@code scale} fractional digits ({@link #keyScaleAt}),
     * would store it rounded: the column keeps fewer digits than the statements' cast, so an upsert's insert
     * would round the key onto another row's, and its ON CONFLICT write that row, where an update finds none.
     * A number given as text is read as Java reads it; a time given as text by the fraction of a second it
     * spells ({@link #TEXT_FRACTION}: the digits after the seconds of {@code hh:mm:ss.f}, {@code mm:ss.f} or
     * {@code hhmmss.f}).
     */
    private void requireKept(RowKey key, int i, Object value, int scale) {
        String column = keyColumns.get(i);
        String type = keyUnderlyingTypes.get(column);
        BigDecimal decimal = null;
        if (value instanceof BigDecimal d) {
            decimal = d;
        } else if (value instanceof Long || value instanceof Integer) {
            decimal = BigDecimal.valueOf(((Number) value).longValue());
        } else if (value instanceof String text && "numeric".equals(type)) {
            try {
                decimal = new BigDecimal(text.strip());
            } catch (NumberFormatException e) {
                // not a number as Java reads it (NaN, PostgreSQL's own spellings): the cast decides
            }
        }
        if (decimal != null && decimalsBeyond(decimal, scale)) {
            throw new IllegalArgumentException("key " + key + " of " + table + " has the value " + value
                    + " for column " + column + " (" + type + " with scale " + scale + "), which the column would"
                    + " round to another row's key");
        }
        if (finerThan(value, scale)
                || value instanceof String text && TIMES.contains(type) && textFinerThan(text, scale)) {
            throw new IllegalArgumentException("key " + key + " of " + table + " has a time value " + value
                    + " for column " + column + " (" + type + " with " + scale + " fractional digits of a second),"
                    + " which the column would round to another row's key");
        }
    }

    /**
     * Refuses key value {@code i} when it is longer than the {@code length} characters its column's domain keeps
     * ({@link #keyLengthAt}), as the text the cast reads (trailing spaces aside for a {@code char(n)}, whose
     * comparison ignores them).
     */
    private void requireFits(RowKey key, int i, Object value, int length) {
        if (!(value instanceof CharSequence
                || value instanceof Long
                || value instanceof Integer
                || value instanceof Short
                || value instanceof BigInteger
                || value instanceof Boolean
                || value instanceof UUID)) {
            return;
        }
        String column = keyColumns.get(i);
        String type = keyUnderlyingTypes.get(column);
        String text = value.toString();
        if ("bpchar".equals(type)) {
            text = text.replaceFirst(" +$", "");
        }
        if (text.codePointCount(0, text.length()) > length) {
            if (type.equals(columnTypes.get(column))) {
                throw new IllegalArgumentException("key " + key + " of " + table + " has the value " + value
                        + " for column " + column + " (" + type + "(" + length + ")), longer than the " + length
                        + " characters the column keeps: an upsert's insert cuts spaces past them, and its ON"
                        + " CONFLICT would write another row's key");
            }
            throw new IllegalArgumentException("key " + key + " of " + table + " has the value " + value
                    + " for column " + column + " (" + columnTypes.get(column) + ", a domain over " + type + "("
                    + length + ")), longer than the " + length + " characters the domain keeps: the cast to it cuts"
                    + " the key, and it would name another row's key");
        }
    }

    /** Whether {@code decimal} has nonzero digits beyond {@code scale} fractional digits. */
    private static boolean decimalsBeyond(BigDecimal decimal, int scale) {
        return decimal.signum() != 0 && decimal.stripTrailingZeros().scale() > scale;
    }

    /**
     * A fraction of a second as PostgreSQL reads it in a time or timestamp given as text: after {@code
     * hh:mm:ss} or {@code mm:ss}, or after the ISO 8601 basic {@code hhmmss}.
     */
    private static final Pattern TEXT_FRACTION = Pattern.compile("(?:\\d:\\d{1,2}|\\d{6})\\.(\\d+)");

    /** Whether a time given as text spells a nonzero digit beyond {@code digits} fractional digits of a second. */
    private static boolean textFinerThan(String text, int digits) {
        Matcher fraction = TEXT_FRACTION.matcher(text);
        while (fraction.find()) {
            String decimals = fraction.group(1);
            for (int i = digits; i < decimals.length(); i++) {
                if (decimals.charAt(i) != '0') {
                    return true;
                }
            }
        }
        return false;
    }

    /** Whether a time value has more than {@code digits} fractional digits of a second. */
    private static boolean finerThan(Object value, int digits) {
        long unit = 1;
        for (int i = digits; i < 9; i++) {
            unit *= 10;
        }
        if (value instanceof java.sql.Timestamp timestamp) {
            return timestamp.getNanos() % unit != 0;
        }
        return value instanceof TemporalAccessor time
                && time.isSupported(ChronoField.NANO_OF_SECOND)
                && time.getLong(ChronoField.NANO_OF_SECOND) % unit != 0;
    }

    /**
     * The fractional digits a column of {@code type} (as {@code format_type(oid, -1)} names it) with the type
     * modifier {@code typmod} keeps, when they are fewer than a cast to the type without modifier keeps; null
     * otherwise. A numeric's modifier holds its scale in its low 11 bits, signed (negative from PostgreSQL 15).
     */
    public static Integer scale(String type, int typmod) {
        if ("numeric".equals(type) && typmod >= 4) {
            return (((typmod - 4) & 0x7ff) ^ 1024) - 1024;
        }
        if (TIMES.contains(type) && typmod >= 0 && typmod < 6) {
            return typmod;
        }
        return null;
    }

    /**
     * Whether an {@code interval} with the type modifier {@code typmod} (its fields in the high 16 bits, its
     * precision in the low 16) changes some values assigned or cast to it: fields that stop short of seconds
     * ({@code interval day} drops hours), or fewer than six fractional digits of a second.
     */
    public static boolean intervalRounds(int typmod) {
        if (typmod < 0) {
            return false;
        }
        int fields = (typmod >> 16) & 0x7fff;
        int precision = typmod & 0xffff;
        // every field, or a range down to seconds: SECOND, MINUTE TO SECOND, HOUR TO SECOND, DAY TO SECOND
        boolean toSeconds = fields == 0x7fff || fields == 4096 || fields == 6144 || fields == 7168 || fields == 7176;
        return !toSeconds || precision < 6;
    }
}
