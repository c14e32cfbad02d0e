package dev.fencing.verify;

import picocli.CommandLine.TypeConversionException;

/** Parses whole-number flags with messages in plain words. Stateless and thread-safe. */
final class WholeNumbers {
    private WholeNumbers() {}

    /** @throws TypeConversionException naming the value when it is not a whole number in int range */
    static int parseInt(String value) {
        long parsed = parseLong(value);
        if (parsed < Integer.MIN_VALUE || parsed > Integer.MAX_VALUE) {
            throw new TypeConversionException("'" + value + "' is far too large");
        }
        return (int) parsed;
    }

    /** @throws TypeConversionException naming the value when it is not a whole number */
    static long parseLong(String value) {
        try {
            return Long.parseLong(value.trim());
        } catch (NumberFormatException e) {
            throw new TypeConversionException("'" + value + "' is not a whole number (for example 6)");
        }
    }
}
