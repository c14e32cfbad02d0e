package dev.fencing.redis.internal;

/**
 * Whether a Java string has a UTF-8 form: a UTF-16 surrogate without its pair has none ({@code getBytes} sends
 * {@code ?} in its place, so that two strings different in Java would be one in Redis).
 */
public final class Utf8Text {
    private Utf8Text() {}

    /** The index of the first surrogate without its pair in {@code text}, or -1 if it has none. */
    public static int firstUnpaired(String text) {
        for (int i = 0; i < text.length(); i++) {
            if (unpaired(text, i)) {
                return i;
            }
        }
        return -1;
    }

    /** Whether the char at {@code i} is a surrogate without its pair (a high one before it, a low one after). */
    static boolean unpaired(String text, int i) {
        char c = text.charAt(i);
        if (Character.isHighSurrogate(c)) {
            return i + 1 == text.length() || !Character.isLowSurrogate(text.charAt(i + 1));
        }
        return Character.isLowSurrogate(c) && (i == 0 || !Character.isHighSurrogate(text.charAt(i - 1)));
    }
}
