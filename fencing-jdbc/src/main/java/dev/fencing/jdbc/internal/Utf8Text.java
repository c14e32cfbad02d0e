package dev.fencing.jdbc.internal;

import java.util.Locale;

/**
 * Whether a Java string has a UTF-8 form: a UTF-16 surrogate without its pair has none, and the driver sends
 * {@code ?} in its place, so that two keys different in Java would name one row in the database.
 */
public final class Utf8Text {
    private Utf8Text() {}

    /**
     * @throws IllegalArgumentException naming {@code what}, the surrogate and its index when {@code text} holds a
     *     surrogate without its pair
     */
    public static void requireEncodable(CharSequence text, String what) {
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            boolean unpaired = Character.isHighSurrogate(c)
                    ? i + 1 == text.length() || !Character.isLowSurrogate(text.charAt(i + 1))
                    : Character.isLowSurrogate(c) && (i == 0 || !Character.isHighSurrogate(text.charAt(i - 1)));
            if (unpaired) {
                throw new IllegalArgumentException(what + " holds an unpaired UTF-16 surrogate \\u"
                        + Integer.toHexString(c).toUpperCase(Locale.ROOT) + " at index " + i
                        + ", which UTF-8 cannot encode (the driver would send '?' in its place)");
            }
        }
    }
}
