package dev.fencing.harness;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * Parses the durations users type on the command line: {@code 500ms}, {@code 2s}, {@code 1.5s}, {@code 2m},
 * {@code 1h}, or ISO-8601 ({@code PT2S}); each tool gives the examples its messages show, for flags of its own
 * scale. Immutable and thread-safe.
 *
 * <pre>{@code
 * Durations durations = new Durations("use for example 40s or 10m", "500ms, 40s, 1.5s, 10m, 1h or PT40S");
 * commandLine.registerConverter(Duration.class, durations);
 * }</pre>
 */
public final class Durations implements ITypeConverter<Duration> {
    private static final Pattern SIMPLE = Pattern.compile("(\\d+(?:\\.\\d+)?)(ms|s|m|h)");

    private final String negativeAdvice;
    private final String examples;

    /**
     * @param negativeAdvice what the message for a negative value says after "is negative; "
     * @param examples what the message for a value that is no duration lists after "use for example "
     */
    public Durations(String negativeAdvice, String examples) {
        this.negativeAdvice = negativeAdvice;
        this.examples = examples;
    }

    @Override
    public Duration convert(String value) {
        return parse(value);
    }

    /** @throws TypeConversionException naming the value when it is not a duration of zero or more */
    public Duration parse(String value) {
        String text = value == null ? "" : value.trim().toLowerCase(Locale.ROOT);
        if (text.startsWith("-")) {
            throw new TypeConversionException("'" + value + "' is negative; " + negativeAdvice);
        }
        Matcher matcher = SIMPLE.matcher(text);
        if (matcher.matches()) {
            double amount = Double.parseDouble(matcher.group(1));
            double millis =
                    switch (matcher.group(2)) {
                        case "ms" -> amount;
                        case "s" -> amount * 1_000;
                        case "m" -> amount * 60_000;
                        default -> amount * 3_600_000;
                    };
            return Duration.ofMillis(Math.round(millis));
        }
        try {
            Duration parsed = Duration.parse(value.trim());
            if (parsed.isNegative()) {
                throw new TypeConversionException("'" + value + "' is negative; " + negativeAdvice);
            }
            return parsed;
        } catch (DateTimeParseException | NullPointerException e) {
            throw new TypeConversionException("'" + value + "' is not a duration; use for example " + examples);
        }
    }

    /** {@code 1h}, {@code 5m}, {@code 2s}, {@code 1.5s} or {@code 500ms}, for messages: as a user types them. */
    public static String format(Duration duration) {
        long millis = duration.toMillis();
        if (millis >= 3_600_000 && millis % 3_600_000 == 0) {
            return millis / 3_600_000 + "h";
        }
        if (millis >= 60_000 && millis % 60_000 == 0) {
            return millis / 60_000 + "m";
        }
        if (millis % 1_000 == 0) {
            return millis / 1_000 + "s";
        }
        if (millis > 1_000) {
            return String.format(Locale.ROOT, "%.1fs", millis / 1_000.0);
        }
        return millis + "ms";
    }
}
