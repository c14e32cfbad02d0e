package dev.fencing.jdbc.internal;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * Reads a caller's SQL fragment (an expression or predicate that fencing-jdbc splices into its own
 * statement) the way PostgreSQL's lexer ({@code src/backend/parser/scan.l}) reads it, to prove that the
 * fragment stays one self-contained expression: every literal closes inside the fragment, parentheses
 * outside literals balance, and nothing outside literals ends the statement or hides the rest of it.
 *
 * <p>Why a lexer and not a search for {@code '} and {@code )}: a check that does not know where PostgreSQL's
 * literals begin and end can be fooled into counting a parenthesis as quoted text while the server reads
 * it as SQL. {@code note <> $$'$$) OR (TRUE OR note = $$'$$} looks balanced to a check that only knows
 * {@code '...'}; PostgreSQL reads two dollar-quoted strings and a top-level {@code OR} that matches every
 * row. Where PostgreSQL's reading depends on a setting or version, the fragment is refused rather than
 * guessed at.
 *
 * <p>What is lexed, as PostgreSQL does:
 *
 * <ul>
 *   <li>{@code '...'} with {@code ''} for a quote; also {@code N'...'}. A backslash inside is refused:
 *       with {@code standard_conforming_strings = off} (a session may set it) {@code \'} does not close
 *       the string, with it on it does, so the fragment's shape would depend on the session.
 *   <li>{@code E'...'}: a backslash escapes the next character, {@code ''} is a quote.
 *   <li>{@code U&'...'} and {@code U&"..."}: {@code ''} / {@code ""} only; backslashes are escapes that never
 *       end the literal (PostgreSQL refuses {@code U&'} when {@code standard_conforming_strings} is off).
 *   <li>{@code B'...'} and {@code X'...'}: end at the first quote (no doubling in bit strings).
 *   <li>{@code $tag$...$tag$} with a tag of ASCII letters, digits and {@code _} (not starting with a digit),
 *       or the empty one; the body ends at the first {@code $tag$}. A tag with a non-ASCII character, which
 *       PostgreSQL accepts, is refused: the JDBC driver does not take it for a dollar quote, so it would
 *       rewrite escapes and {@code ?} inside what PostgreSQL then reads as a string, moving the quotes.
 *   <li>{@code "..."} quoted identifiers, {@code ""} for a quote.
 * </ul>
 *
 * Refused outside literals: {@code ;}, comments ({@code --} and {@code /*}, nested or not: a fragment needs
 * none, and an unterminated one would swallow the fence condition that follows it), a {@code $} that does
 * not start a dollar quote at a token boundary (a positional {@code $1}, or a {@code $} glued to a word,
 * where PostgreSQL versions disagree whether a dollar quote begins), a closing parenthesis without its
 * opening one, a {@code ?} that is not doubled, and <code>&#123;</code> or <code>&#125;</code>: the JDBC
 * driver rewrites those (a positional parameter, its escape syntax) before PostgreSQL reads the statement.
 * Refused at the end: an open literal or parenthesis.
 *
 * <p>The check holds only if PostgreSQL receives the text it checked. Jdbi's own SQL parser and template
 * engine read literals their own way ({@code \'} closes no {@code '...'} for them, and they drop a
 * backslash they find outside what they take for a literal), so a fragment that is safe as written could
 * reach the server rewritten into one that escapes. The library's statements are therefore parsed by
 * {@link StatementParser}, on this lexer, and rendered by no template engine: the server gets the text
 * checked here with only its {@code :name} parameters replaced.
 *
 * <p>Pure and thread-safe.
 */
public final class SqlFragment {
    private SqlFragment() {}

    /**
     * Checks the fragment and returns the named parameters ({@code :name}, not the {@code ::} cast) it uses
     * outside literals, in order of first use.
     *
     * @param what what the fragment is, named in the message (for example "predicate")
     * @throws IllegalArgumentException naming the fragment, the position and the reason when it is refused
     */
    public static Set<String> check(String what, String fragment) {
        if (fragment == null || fragment.isBlank()) {
            throw new IllegalArgumentException(what + " must not be blank");
        }
        Set<String> names = new LinkedHashSet<>();
        for (Parameter parameter : read(what, fragment, true)) {
            names.add(parameter.name());
        }
        return Collections.unmodifiableSet(names);
    }

    /**
     * A named parameter outside literals: {@code :name} from its colon ({@code start}) to just after the
     * name ({@code end}).
     */
    record Parameter(int start, int end, String name) {}

    /**
     * Reads {@code fragment} under the same rules as {@link #check} (a whole statement of the library's,
     * with the fragments spliced into it, obeys them too) and returns its named parameters in order, every
     * use.
     *
     * @throws IllegalArgumentException as {@link #check} does
     */
    static List<Parameter> parameters(String what, String fragment) {
        return read(what, fragment, false);
    }

    /** {@link #parameters}; with {@code callers}, a caller's fragment, refused when it uses a {@link #RESERVED_NAMES name}. */
    private static List<Parameter> read(String what, String fragment, boolean callers) {
        List<Parameter> parameters = new ArrayList<>();
        int depth = 0;
        int n = fragment.length();
        int i = 0;
        while (i < n) {
            char c = fragment.charAt(i);
            boolean boundary = i == 0 || !wordChar(fragment.charAt(i - 1));
            if (c == '\'') {
                i = standardString(what, fragment, i + 1);
            } else if (c == '"') {
                int end = doubledQuote(what, fragment, i + 1, '"', "quoted identifier");
                if (callers) {
                    requireNotReserved(
                            what,
                            fragment,
                            i,
                            fragment.substring(i + 1, end - 1).replace("\"\"", "\""));
                }
                i = end;
            } else if (boundary && (c == 'E' || c == 'e') && at(fragment, i + 1, '\'')) {
                i = escapeString(what, fragment, i + 2);
            } else if (boundary && (c == 'U' || c == 'u') && at(fragment, i + 1, '&') && at(fragment, i + 2, '\'')) {
                i = doubledQuote(what, fragment, i + 3, '\'', "Unicode string");
            } else if (boundary && (c == 'U' || c == 'u') && at(fragment, i + 1, '&') && at(fragment, i + 2, '"')) {
                int end = doubledQuote(what, fragment, i + 3, '"', "Unicode quoted identifier");
                if (callers) {
                    requireNotReserved(what, fragment, i, unicodeName(fragment, i + 3, end - 1));
                }
                i = end;
            } else if (boundary && (c == 'B' || c == 'b' || c == 'X' || c == 'x') && at(fragment, i + 1, '\'')) {
                int end = fragment.indexOf('\'', i + 2);
                if (end < 0) {
                    throw refused(what, fragment, i, "a bit string that is never closed");
                }
                i = end + 1;
            } else if (boundary && (c == 'N' || c == 'n') && at(fragment, i + 1, '\'')) {
                i = standardString(what, fragment, i + 2);
            } else if (c == '$') {
                i = dollarQuoted(what, fragment, i, boundary);
            } else if (c == '-' && at(fragment, i + 1, '-') || c == '/' && at(fragment, i + 1, '*')) {
                throw refused(what, fragment, i, "a comment; a fragment needs none");
            } else if (c == ';') {
                throw refused(what, fragment, i, "';', which would end the statement");
            } else if (c == '?' && at(fragment, i + 1, '?')) {
                i += 2; // the JDBC driver sends "??" as PostgreSQL's operator character '?'
            } else if (c == '?') {
                throw refused(
                        what,
                        fragment,
                        i,
                        "a '?', which the JDBC driver takes for a positional parameter; use :name, and write"
                                + " PostgreSQL's ? operators as ?? (or jsonb_exists())");
            } else if (c == '{' || c == '}') {
                throw refused(
                        what,
                        fragment,
                        i,
                        "'" + c + "', the JDBC escape syntax the driver rewrites before PostgreSQL reads it"
                                + " (PostgreSQL itself has no use for it outside a literal)");
            } else if (c == '(') {
                depth++;
                i++;
            } else if (c == ')') {
                if (--depth < 0) {
                    throw refused(
                            what,
                            fragment,
                            i,
                            "a ')' without its '(' (unbalanced parentheses), which would close the library's own"
                                    + " parenthesis and escape the fence condition");
                }
                i++;
            } else if (c == ':' && at(fragment, i + 1, ':')) {
                i += 2; // a cast, not a parameter
            } else if (c == ':' && i + 1 < n && nameStart(fragment.charAt(i + 1)) && boundary) {
                int end = i + 1;
                while (end < n && nameChar(fragment.charAt(end))) {
                    end++;
                }
                parameters.add(new Parameter(i, end, fragment.substring(i + 1, end)));
                i = end;
            } else if (wordChar(c)) {
                // a whole word at once, so that a letter inside it (the e of "note") is not taken for a
                // literal's prefix; a '$' glued to the word is left to the '$' branch, which refuses it
                int end = i + 1;
                while (end < n && wordChar(fragment.charAt(end)) && fragment.charAt(end) != '$') {
                    end++;
                }
                // an unquoted name, folded to lower case as PostgreSQL folds ASCII letters
                if (callers) {
                    requireNotReserved(
                            what, fragment, i, fragment.substring(i, end).toLowerCase(Locale.ROOT));
                }
                i = end;
            } else {
                i++;
            }
        }
        if (depth != 0) {
            throw refused(what, fragment, n, depth + " unclosed '(' (unbalanced parentheses)");
        }
        return parameters;
    }

    /**
     * Names that fencing-jdbc's statements give their own parts ({@link FencedSql}'s {@code WITH} query),
     * which a fragment may not use: a CTE's name hides a table of that name from every part of its
     * statement but its own query, so the reporting statement would read such a table in the predicate as
     * its CTE, while the UPDATE it reports on reads the table.
     */
    static final Set<String> RESERVED_NAMES = Set.of(FencedSql.WRITTEN_ROWS);

    private static void requireNotReserved(String what, String fragment, int position, String name) {
        if (RESERVED_NAMES.contains(name)) {
            throw refused(
                    what,
                    fragment,
                    position,
                    "the name " + name + ", which fencing-jdbc's statements give a part of their own; name a"
                            + " table or column of yours called so with its schema or table");
        }
    }

    /**
     * The name a {@code U&"..."} identifier (its body from {@code from} to {@code to}, doubled quotes and
     * all) stands for: escapes decoded with {@code \} or the character its {@code UESCAPE 'c'} names. A
     * malformed escape, which PostgreSQL refuses, is kept as written.
     */
    private static String unicodeName(String fragment, int from, int to) {
        char escape = '\\';
        int next = to + 1;
        while (next < fragment.length() && Character.isWhitespace(fragment.charAt(next))) {
            next++;
        }
        if (fragment.regionMatches(true, next, "uescape", 0, 7)) {
            int quote = fragment.indexOf('\'', next + 7);
            if (quote >= 0 && quote + 1 < fragment.length()) {
                escape = fragment.charAt(quote + 1);
            }
        }
        String body = fragment.substring(from, to).replace("\"\"", "\"");
        StringBuilder name = new StringBuilder();
        for (int i = 0; i < body.length(); i++) {
            char c = body.charAt(i);
            if (c == escape && i + 1 < body.length() && body.charAt(i + 1) == escape) {
                name.append(escape);
                i++;
            } else if (c == escape && i + 5 <= body.length() && hex(body, i + 1, i + 5)) {
                name.appendCodePoint(Integer.parseInt(body.substring(i + 1, i + 5), 16));
                i += 4;
            } else if (c == escape && i + 8 <= body.length() && body.charAt(i + 1) == '+' && hex(body, i + 2, i + 8)) {
                name.appendCodePoint(Integer.parseInt(body.substring(i + 2, i + 8), 16));
                i += 7;
            } else {
                name.append(c);
            }
        }
        return name.toString();
    }

    private static boolean hex(String s, int from, int to) {
        for (int i = from; i < to; i++) {
            if (Character.digit(s.charAt(i), 16) < 0) {
                return false;
            }
        }
        return true;
    }

    /** {@code '...'} from just after its opening quote; returns the index after its closing quote. */
    private static int standardString(String what, String fragment, int from) {
        for (int i = from; i < fragment.length(); i++) {
            char c = fragment.charAt(i);
            if (c == '\\') {
                throw refused(
                        what,
                        fragment,
                        i,
                        "a backslash in a '...' string, which PostgreSQL reads as an escape when"
                                + " standard_conforming_strings is off; bind the value, or write E'...'");
            }
            if (c == '\'') {
                if (at(fragment, i + 1, '\'')) {
                    i++;
                } else {
                    return i + 1;
                }
            }
        }
        throw refused(what, fragment, from - 1, "a string that is never closed (unclosed quote)");
    }

    /** {@code E'...'}: a backslash escapes the next character, whatever it is. */
    private static int escapeString(String what, String fragment, int from) {
        for (int i = from; i < fragment.length(); i++) {
            char c = fragment.charAt(i);
            if (c == '\\') {
                i++;
            } else if (c == '\'') {
                if (at(fragment, i + 1, '\'')) {
                    i++;
                } else {
                    return i + 1;
                }
            }
        }
        throw refused(what, fragment, from - 2, "an E'...' string that is never closed (unclosed quote)");
    }

    /** A literal closed by {@code quote} where a doubled {@code quote} stands for one. */
    private static int doubledQuote(String what, String fragment, int from, char quote, String kind) {
        for (int i = from; i < fragment.length(); i++) {
            if (fragment.charAt(i) == quote) {
                if (at(fragment, i + 1, quote)) {
                    i++;
                } else {
                    return i + 1;
                }
            }
        }
        throw refused(what, fragment, from - 1, "a " + kind + " that is never closed (unclosed quote)");
    }

    /** {@code $tag$...$tag$} starting at {@code start}; anything else beginning with {@code $} is refused. */
    private static int dollarQuoted(String what, String fragment, int start, boolean boundary) {
        int end = start + 1;
        if (end < fragment.length() && tagStart(fragment.charAt(end))) {
            end++;
            while (end < fragment.length() && tagChar(fragment.charAt(end))) {
                end++;
            }
        }
        if (!boundary || !at(fragment, end, '$')) {
            throw refused(
                    what,
                    fragment,
                    start,
                    "a '$' that does not open a dollar-quoted string ($tag$...$tag$) at the start of a token;"
                            + " positional parameters and '$' in names are not accepted");
        }
        for (int i = start + 1; i < end; i++) {
            if (fragment.charAt(i) >= 0x80) {
                // PostgreSQL takes any non-ASCII letter in a tag, the JDBC driver only Java identifier
                // characters: where they disagree, the driver reads the body as SQL and rewrites its escapes
                // and '?' before PostgreSQL reads it as a string, and text checked as quoted becomes code.
                throw refused(
                        what,
                        fragment,
                        start,
                        "a dollar-quote tag with the non-ASCII character '" + fragment.charAt(i)
                                + "', which the JDBC driver does not read as PostgreSQL does; use a tag of ASCII"
                                + " letters, digits and '_'");
            }
        }
        String delimiter = fragment.substring(start, end + 1);
        int close = fragment.indexOf(delimiter, end + 1);
        if (close < 0) {
            throw refused(what, fragment, start, "a dollar-quoted string " + delimiter + " that is never closed");
        }
        return close + delimiter.length();
    }

    private static boolean at(String s, int i, char c) {
        return i < s.length() && s.charAt(i) == c;
    }

    /** A character that continues an identifier or number, so that no literal can start right after it. */
    private static boolean wordChar(char c) {
        return c >= 'a' && c <= 'z'
                || c >= 'A' && c <= 'Z'
                || c >= '0' && c <= '9'
                || c == '_'
                || c == '$'
                || c >= 0x80;
    }

    private static boolean tagStart(char c) {
        return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80;
    }

    private static boolean tagChar(char c) {
        return tagStart(c) || c >= '0' && c <= '9';
    }

    private static boolean nameStart(char c) {
        return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z';
    }

    private static boolean nameChar(char c) {
        return nameStart(c) || c >= '0' && c <= '9' || c == '_';
    }

    private static IllegalArgumentException refused(String what, String fragment, int position, String reason) {
        return new IllegalArgumentException(what + " '" + fragment + "' is refused: at position " + position
                + " it has " + reason + ". A fragment must be one self-contained SQL expression; pass values"
                + " with bind()");
    }
}
