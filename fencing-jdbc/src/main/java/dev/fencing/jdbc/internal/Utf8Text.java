package dev.fencing.jdbc.internal;

import dev.fencing.internal.Text;
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
        int i = Text.firstUnpairedSurrogate(text);
        if (i >= 0) {
            throw new IllegalArgumentException(what + " holds an unpaired UTF-16 surrogate \\u"
                    + Integer.toHexString(text.charAt(i)).toUpperCase(Locale.ROOT) + " at index " + i
                    + ", which UTF-8 cannot encode (the driver would send '?' in its place)");
        }
    }
}
