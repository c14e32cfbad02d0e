package dev.fencing.harness;

import java.util.Locale;

/**
 * Text for the JSON the tools write by hand (their summaries, a child's history lines): a value as a JSON string.
 * Stateless and thread-safe.
 *
 * <pre>{@code
 * out.append("{\"sku\":").append(Json.quote(sku)).append('}');
 * }</pre>
 */
public final class Json {
    private Json() {}

    /** {@code value}'s text as a JSON string, or {@code null}. */
    public static String quote(Object value) {
        if (value == null) {
            return "null";
        }
        String text = value.toString();
        StringBuilder quoted = new StringBuilder("\"");
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '"' -> quoted.append("\\\"");
                case '\\' -> quoted.append("\\\\");
                case '\n' -> quoted.append("\\n");
                case '\r' -> quoted.append("\\r");
                case '\t' -> quoted.append("\\t");
                default -> {
                    if (c < 0x20) {
                        quoted.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    } else {
                        quoted.append(c);
                    }
                }
            }
        }
        return quoted.append('"').toString();
    }
}
