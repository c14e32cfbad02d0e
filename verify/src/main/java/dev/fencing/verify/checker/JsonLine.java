package dev.fencing.verify.checker;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Reads one flat JSON object (string, number, boolean and null values; no nesting), the shape of every
 * history line. The checker has its own reader so that it shares no code with the clients that write the
 * histories: a bug in their writer cannot be hidden by the same bug in the reader.
 */
final class JsonLine {
    private static final Pattern HEX_DIGITS = Pattern.compile("[0-9a-fA-F]{4}");
    private static final Pattern JSON_NUMBER = Pattern.compile("-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?");

    private final String text;
    private int at;

    private JsonLine(String text) {
        this.text = text;
    }

    /**
     * The object's members, in order; values are {@code String}, {@code Long}, {@code Double}, {@code Boolean} or
     * {@code null}.
     *
     * @throws IllegalArgumentException naming the position, for anything else (a truncated line included)
     */
    static Map<String, Object> parse(String text) {
        return new JsonLine(text).object();
    }

    private Map<String, Object> object() {
        Map<String, Object> members = new LinkedHashMap<>();
        skipSpace();
        expect('{');
        skipSpace();
        if (peek() == '}') {
            at++;
            return end(members);
        }
        while (true) {
            skipSpace();
            String name = string();
            skipSpace();
            expect(':');
            skipSpace();
            if (members.put(name, value()) != null) {
                throw error("member \"" + name + "\" appears twice");
            }
            skipSpace();
            char next = next();
            if (next == '}') {
                return end(members);
            }
            if (next != ',') {
                throw error("expected ',' or '}' but found '" + next + "'");
            }
        }
    }

    private Map<String, Object> end(Map<String, Object> members) {
        skipSpace();
        if (at != text.length()) {
            throw error("text after the object");
        }
        return members;
    }

    private Object value() {
        char c = peek();
        if (c == '"') {
            return string();
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            return number();
        }
        if (text.startsWith("true", at)) {
            at += 4;
            return Boolean.TRUE;
        }
        if (text.startsWith("false", at)) {
            at += 5;
            return Boolean.FALSE;
        }
        if (text.startsWith("null", at)) {
            at += 4;
            return null;
        }
        throw error("unexpected '" + c + "'");
    }

    private Object number() {
        int start = at;
        if (peek() == '-') {
            at++;
        }
        boolean fraction = false;
        while (at < text.length()) {
            char c = text.charAt(at);
            if (c >= '0' && c <= '9') {
                at++;
            } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
                fraction = true;
                at++;
            } else {
                break;
            }
        }
        String number = text.substring(start, at);
        // JSON's grammar, not Java's: read leniently, "0101" would be 101 and "5." would be 5
        if (!JSON_NUMBER.matcher(number).matches()) {
            throw error("not a JSON number: " + number);
        }
        try {
            return fraction ? (Object) Double.parseDouble(number) : (Object) Long.parseLong(number);
        } catch (NumberFormatException e) {
            throw error("not a number: " + number);
        }
    }

    private String string() {
        expect('"');
        StringBuilder value = new StringBuilder();
        while (true) {
            char c = next();
            if (c == '"') {
                return value.toString();
            }
            if (c != '\\') {
                value.append(c);
                continue;
            }
            char escaped = next();
            switch (escaped) {
                case '"', '\\', '/' -> value.append(escaped);
                case 'b' -> value.append('\b');
                case 'f' -> value.append('\f');
                case 'n' -> value.append('\n');
                case 'r' -> value.append('\r');
                case 't' -> value.append('\t');
                case 'u' -> {
                    if (at + 4 > text.length()) {
                        throw error("truncated \\u escape");
                    }
                    String digits = text.substring(at, at + 4);
                    // four ASCII hex digits, as JSON says: Integer.parseInt also takes a sign and non-ASCII digits,
                    // so "\\u+072" would be 'r'
                    if (!HEX_DIGITS.matcher(digits).matches()) {
                        throw error("bad \\u escape \\u" + digits);
                    }
                    value.append((char) Integer.parseInt(digits, 16));
                    at += 4;
                }
                default -> throw error("bad escape \\" + escaped);
            }
        }
    }

    private void expect(char expected) {
        char c = next();
        if (c != expected) {
            throw error("expected '" + expected + "' but found '" + c + "'");
        }
    }

    private char next() {
        if (at >= text.length()) {
            throw error("the line ends too early");
        }
        return text.charAt(at++);
    }

    private char peek() {
        if (at >= text.length()) {
            throw error("the line ends too early");
        }
        return text.charAt(at);
    }

    private void skipSpace() {
        while (at < text.length() && Character.isWhitespace(text.charAt(at))) {
            at++;
        }
    }

    private IllegalArgumentException error(String problem) {
        return new IllegalArgumentException(problem + " at character " + (at + 1));
    }
}
