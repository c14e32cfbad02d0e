package dev.fencing.internal;

/**
 * What every module checks of the text it sends a server: whether it has a UTF-8 form, and whether it holds
 * control characters. A UTF-16 surrogate without its pair has no UTF-8 form; Java's encoder (and a driver's)
 * sends {@code ?} in its place, so that two strings different in Java would be one name, key or row on the
 * server. Each module words its own refusal.
 */
public final class Text {
    private Text() {}

    /** The index of the first surrogate without its pair in {@code text}, or -1 if it has none. */
    public static int firstUnpairedSurrogate(CharSequence text) {
        for (int i = 0; i < text.length(); i++) {
            if (unpairedSurrogateAt(text, i)) {
                return i;
            }
        }
        return -1;
    }

    /** Whether the char at {@code i} is a surrogate without its pair (a high one before it, a low one after). */
    public static boolean unpairedSurrogateAt(CharSequence text, int i) {
        char c = text.charAt(i);
        if (Character.isHighSurrogate(c)) {
            return i + 1 == text.length() || !Character.isLowSurrogate(text.charAt(i + 1));
        }
        return Character.isLowSurrogate(c) && (i == 0 || !Character.isHighSurrogate(text.charAt(i - 1)));
    }

    /** The index of the first control character (C0, DEL or C1, {@link Character#isISOControl}), or -1. */
    public static int firstControl(CharSequence text) {
        for (int i = 0; i < text.length(); i++) {
            if (Character.isISOControl(text.charAt(i))) {
                return i;
            }
        }
        return -1;
    }

    /** {@code text} fit for a message or a log line: each control character shown as '?'. */
    public static String withoutControls(String text) {
        StringBuilder shown = new StringBuilder(text.length());
        text.codePoints().forEach(cp -> shown.appendCodePoint(Character.isISOControl(cp) ? '?' : cp));
        return shown.toString();
    }
}
