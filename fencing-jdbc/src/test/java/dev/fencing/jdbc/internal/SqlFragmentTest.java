package dev.fencing.jdbc.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class SqlFragmentTest {

    /**
     * Each of these, spliced into {@code ... AND (fragment)}, would let PostgreSQL read a top-level OR (or
     * a second statement, or a commented-out fence) while a check that only knows '...' saw a balanced
     * fragment. FragmentEscapeIT runs the two forms against a real table.
     */
    @ParameterizedTest
    @ValueSource(
            strings = {
                // the two forms
                "note <> $$'$$) OR (TRUE OR note = $$'$$",
                "note <> E'\\'') OR (TRUE OR note = E'\\''",
                // tagged dollar quotes, and a tag that only looks like the closing one
                "note <> $tag$'$tag$) OR (TRUE OR note = $tag$'$tag$",
                "note <> $a$ $b$ ') OR (TRUE OR note = $b$ '",
                // lower-case escape prefix
                "note <> e'\\'') OR (TRUE OR note = e'\\''",
                // a backslash in a standard string: with standard_conforming_strings off, \' does not close it
                "note <> '\\') OR (TRUE OR note = \\'",
                // bit strings do not double quotes
                "note <> B'01'' OR TRUE) OR (TRUE OR note = ''",
                // comments, nested or line, that hide what follows
                "TRUE) OR (TRUE --",
                "TRUE /* /* */ ) OR (TRUE */",
                "TRUE /* ) OR (TRUE */",
                // a second statement
                "TRUE; UPDATE inventory SET last_fence_token = 0",
                // a $ glued to a word or a number: versions disagree whether a dollar quote starts
                "stock > 1$$) OR (TRUE$$",
                "x$$) OR (TRUE OR note = $$",
                // positional parameters
                "stock > $1",
                // plain unbalanced forms and open literals
                "stock >= :qty) OR (true",
                "0), \"sku\" = ('x'",
                "name = 'open",
                "note = $$open",
                "note = E'open\\'",
                "\"open identifier",
                "U&'open",
                "(stock > 1",
                // rewritten by the JDBC driver before PostgreSQL reads them
                "stock > ? OR TRUE",
                "note = {fn ucase('a')}",
            })
    void refusesFragmentsThatCouldEscapeTheirParentheses(String fragment) {
        assertThatThrownBy(() -> SqlFragment.check("predicate", fragment))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("predicate '" + fragment + "' is refused");
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "note <> $$'$$",
                "note <> $tag$ it's ) ( -- /* ; $$ $tag$",
                "note <> E'it\\'s ) ('",
                "note <> E'a\\\\' AND stock > 0",
                "note <> U&'d\\0061t''a ) ('",
                "U&\"sto\"\"ck\" IS NULL OR TRUE",
                "note <> 'it''s (fine'",
                "note <> N'x'",
                "flags = B'0101' OR flags = X'1F'",
                "\"weird ) name\" IS NULL",
                "(stock >= :qty) AND (note <> ')(')",
                "note <> '--' AND note <> '/*' AND note <> ';'",
                "coalesce(stock, 0) - :qty::bigint > 0",
                "e > 1 AND b > 2 AND x > 3 AND u > 4 AND n > 5",
                "note LIKE 'a%'",
                "data ?? 'key' AND note <> '?' AND note <> '{'",
            })
    void acceptsSelfContainedExpressionsWhateverTheirLiteralsHold(String fragment) {
        SqlFragment.check("predicate", fragment);
    }

    @ParameterizedTest
    @ValueSource(strings = {"TRUE --", "TRUE -- ) OR (TRUE", "TRUE /* */"})
    void refusesCommentsEvenWhenBalanced(String fragment) {
        assertThatThrownBy(() -> SqlFragment.check("predicate", fragment)).hasMessageContaining("a comment");
    }

    @Test
    void namesAreThoseOutsideLiteralsAndNotCasts() {
        assertThat(SqlFragment.check("expression", "coalesce(stock, 0) - :qty::bigint + :extra"))
                .containsExactly("qty", "extra");
        assertThat(SqlFragment.check("predicate", "note <> ':ghost' AND note <> $$:ghost$$ AND stock > :min"))
                .containsExactly("min");
    }

    @Test
    void theMessageNamesTheFragmentThePositionAndTheReason() {
        assertThatThrownBy(() -> SqlFragment.check("predicate", "a = 1; DROP TABLE x"))
                .hasMessage("predicate 'a = 1; DROP TABLE x' is refused: at position 5 it has ';', which would end"
                        + " the statement. A fragment must be one self-contained SQL expression; pass values with"
                        + " bind()");
    }
}
