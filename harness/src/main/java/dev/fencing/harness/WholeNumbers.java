package dev.fencing.harness;

import picocli.CommandLine;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * Parses whole-number flags with messages in plain words (picocli's own say "is not a long"). Each tool names the
 * example its messages show. Stateless and thread-safe.
 *
 * <pre>{@code
 * WholeNumbers.register(commandLine, 4);
 * }</pre>
 */
public final class WholeNumbers {
    private WholeNumbers() {}

    /** Registers converters for {@code int}, {@code long} and their boxes whose messages give {@code example}. */
    public static void register(CommandLine commandLine, long example) {
        ITypeConverter<Integer> ints = value -> parseInt(value, example);
        ITypeConverter<Long> longs = value -> parseLong(value, example);
        commandLine.registerConverter(Integer.class, ints);
        commandLine.registerConverter(Integer.TYPE, ints);
        commandLine.registerConverter(Long.class, longs);
        commandLine.registerConverter(Long.TYPE, longs);
    }

    /** @throws TypeConversionException naming the value when it is not a whole number in int range */
    public static int parseInt(String value, long example) {
        long parsed = parseLong(value, example);
        if (parsed < Integer.MIN_VALUE || parsed > Integer.MAX_VALUE) {
            throw new TypeConversionException("'" + value + "' is far too large");
        }
        return (int) parsed;
    }

    /** @throws TypeConversionException naming the value when it is not a whole number */
    public static long parseLong(String value, long example) {
        try {
            return Long.parseLong(value.trim());
        } catch (NumberFormatException e) {
            throw new TypeConversionException("'" + value + "' is not a whole number (for example " + example + ")");
        }
    }
}
