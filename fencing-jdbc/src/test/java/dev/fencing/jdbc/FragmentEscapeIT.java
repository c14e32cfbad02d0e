package dev.fencing.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.FencePolicy;
import dev.fencing.jdbc.internal.FencedSql;
import java.sql.PreparedStatement;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.HashPrefixSqlParser;
import org.jdbi.v3.core.statement.UnableToExecuteStatementException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 9, fencing-jdbc item 1: a predicate that PostgreSQL reads as closing the library's parenthesis
 * turns the fenced UPDATE into {@code ... AND fence < :token AND (x) OR (TRUE ...)}, which on a table
 * without the guard trigger overwrites every row under any token. The same statement text, run directly
 * on the unprotected twin, shows the damage; the builder refuses the fragment before it reaches a statement.
 */
class FragmentEscapeIT {
    static FencingDatabase db;

    @BeforeAll
    static void database() {
        db = FencingDatabase.create("fragment_it", 2);
    }

    @AfterAll
    static void dropDatabase() {
        db.close();
    }

    @BeforeEach
    void rowsAtTokenNine() {
        db.reset("A-1", "A-2", "A-3");
        db.jdbi.useHandle(h -> h.execute("UPDATE inventory_plain SET last_fence_token = 9"));
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "updated_by <> $$'$$) OR (TRUE OR updated_by = $$'$$",
                "updated_by <> E'\\'') OR (TRUE OR updated_by = E'\\''",
                "updated_by <> $t$'$t$) OR (TRUE OR updated_by = $t$'$t$",
            })
    void aFragmentThatEscapesItsParenthesesIsRefusedThoughItsStatementWouldOverwriteEveryRow(String attack) {
        FencedTable plain =
                FencedTable.builder().table("inventory_plain").keyColumns("sku").build(db.jdbi);

        // the counterfactual: the statement this predicate would produce, token 1 against stored 9
        String sql = FencedSql.bareUpdate(plain, "\"stock\" = 0", "(" + attack + ")", FencePolicy.STRICT);
        int overwritten = db.jdbi.withHandle(h -> h.createUpdate(sql)
                .bind(FencedSql.keyBinding(0), "A-1")
                .bind(FencedSql.TOKEN, 1L)
                .execute());
        assertOverwrittenButRefused(overwritten, plain, attack, "predicate '" + attack + "' is refused");
    }

    /**
     * A fragment that is one self-contained expression as PostgreSQL reads it, so the lexer accepts it. But
     * Jdbi's own SQL parser reads {@code E'\\'} as an open string (for it {@code \'} closes nothing) and
     * drops the backslashes it then finds outside its idea of a literal: the server would receive {@code
     * E'') OR (TRUE OR updated_by = ''}, a top-level OR. The writer's statements reach PostgreSQL as the lexer
     * read them.
     */
    @Test
    void aFragmentThatJdbisParserWouldRewriteIntoAnEscapeStaysInItsRow() {
        String fragment = "updated_by <> E'\\\\' AND updated_by <> E'\\') OR (TRUE OR updated_by = \\''"
                + " AND updated_by <> $$'$$";
        db.jdbi.useHandle(h -> {
            h.execute("UPDATE inventory SET updated_by = 'x', last_fence_token = 9");
            h.execute("UPDATE inventory_plain SET updated_by = 'x'");
        });
        FencedTable plain =
                FencedTable.builder().table("inventory_plain").keyColumns("sku").build(db.jdbi);
        FencedWriter writer = FencedWriter.builder(db.jdbi).build();

        // the counterfactual: the fenced statement, run through Jdbi's default parsing, token 1 against 9
        String sql = FencedSql.bareUpdate(plain, "\"stock\" = 0", "(" + fragment + ")", FencePolicy.STRICT);
        int overwritten = db.jdbi.withHandle(h -> h.createUpdate(sql)
                .bind(FencedSql.keyBinding(0), "A-1")
                .bind(FencedSql.TOKEN, 1L)
                .execute());
        assertThat(overwritten).as("every row, under a stale token").isEqualTo(3);

        // the writer: the stale token is refused; a fresh one writes its row and no other
        db.jdbi.useHandle(h -> h.execute("UPDATE inventory_plain SET stock = 10, last_fence_token = 9"));
        for (FencedTable table : new FencedTable[] {plain, db.inventory()}) {
            FencedUpdate update = FencedUpdate.builder(table)
                    .key("A-1")
                    .set("stock", 0)
                    .where(fragment)
                    .build();
            assertThat(writer.tryUpdate(update, 1)).isEqualTo(new WriteOutcome.Rejected(9, 1));
            assertThat(writer.tryUpdate(update, 10)).isEqualTo(new WriteOutcome.Applied(10));
            assertThat(rows(table)).isEqualTo("A-1:0:10 A-2:10:9 A-3:10:9");
        }
    }

    /**
     * PostgreSQL accepts any non-ASCII letter in a dollar-quote tag, the JDBC driver only Java identifier
     * characters. So the driver reads the body of {@code $×$...$×$} as SQL and rewrites the escape {@code {fn
     * insert(a,b,c,d)}} in it into {@code overlay(a placing d from b for c)}, reordering the quotes: what the
     * lexer saw inside a string reaches PostgreSQL as a top-level {@code OR TRUE}. Such tags are refused.
     */
    @Test
    void aDollarQuoteWithANonAsciiTagIsRefusedThoughTheDriverWouldTurnItsBodyIntoAnOrThatMatchesEveryRow()
            throws Exception {
        String d = "$\u00d7$";
        String attack = d + "{fn insert(x " + d + " <> " + d + " y,text " + d + " y2,z,'" + d
                + ") OR TRUE OR NULL = substring(" + d + "' " + d + ")}" + d;
        FencedTable plain =
                FencedTable.builder().table("inventory_plain").keyColumns("sku").build(db.jdbi);

        // the counterfactual: the statement with this predicate, through the driver, token 5 against stored 9
        String named = FencedSql.bareUpdate(plain, "\"stock\" = 0", "(" + attack + ")", FencePolicy.STRICT);
        List<String> names = new ArrayList<>();
        Matcher parameter = Pattern.compile(":(fence_[a-z_0-9]+)").matcher(named);
        String positional = parameter.replaceAll(match -> {
            names.add(match.group(1));
            return "?";
        });
        int overwritten = db.jdbi.withHandle(h -> {
            try (PreparedStatement statement = h.getConnection().prepareStatement(positional)) {
                for (int i = 0; i < names.size(); i++) {
                    if (names.get(i).equals(FencedSql.TOKEN)) {
                        statement.setLong(i + 1, 5);
                    } else {
                        statement.setString(i + 1, "A-1");
                    }
                }
                return statement.executeUpdate();
            }
        });
        assertOverwrittenButRefused(
                overwritten, plain, attack, "a dollar-quote tag with the non-ASCII character '\u00d7'");
    }

    /** The counterfactual overwrote every row; the fix: the fragment never reaches a statement. */
    private static void assertOverwrittenButRefused(int overwritten, FencedTable plain, String attack, String refusal) {
        assertThat(overwritten)
                .as("every row, though the token is stale and the key names one")
                .isEqualTo(3);
        assertThatThrownBy(() ->
                        FencedUpdate.builder(plain).key("A-1").set("stock", 0).where(attack))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(refusal);
    }

    /** The writer's statements do not depend on the SQL parser the application configured on its Jdbi. */
    @Test
    void theWriterWorksWithAJdbiThatParsesHashParameters() {
        Jdbi hashes = Jdbi.create(db.pool).setSqlParser(new HashPrefixSqlParser());
        db.jdbi.useHandle(h -> h.execute("UPDATE inventory SET last_fence_token = 9"));
        FencedTable inventory =
                FencedTable.builder().table("inventory").keyColumns("sku").build(hashes);
        FencedUpdate update = FencedUpdate.builder(inventory)
                .key("A-1")
                .setExpression("stock", "stock - :qty")
                .bind("qty", 3)
                .build();
        FencedWriter writer = FencedWriter.builder(hashes).build();

        assertThat(writer.tryUpdate(update, 8)).isEqualTo(new WriteOutcome.Rejected(9, 8));
        assertThat(writer.tryUpdate(update, 10)).isEqualTo(new WriteOutcome.Applied(10));
        assertThat(db.row("A-1")).isEqualTo("7:10");
        String ran = writer.advanceWatermarkAndRun("report", 10, h -> "ran");
        assertThat(ran).isEqualTo("ran");
    }

    private static String rows(FencedTable table) {
        return db.jdbi.withHandle(h -> h.createQuery("SELECT string_agg(sku || ':' || stock || ':' || last_fence_token,"
                        + " ' ' ORDER BY sku) FROM " + table.qualifiedName())
                .mapTo(String.class)
                .one());
    }

    @Test
    void postgresReadsABackslashInAStandardStringDependingOnTheSessionAndRefusesUnicodeStringsWhenItEscapes() {
        // why the lexer refuses '\' in '...' and accepts it in U&'...'
        // on a connection of its own, outside the pool: the setting must not leak into other tests
        org.jdbi.v3.core.Jdbi.create(db.database.dataSource()).useHandle(h -> {
            h.execute("SET standard_conforming_strings = on");
            assertThat(h.createQuery("SELECT length('\\')").mapTo(Integer.class).one())
                    .isEqualTo(1);
            h.execute("SET standard_conforming_strings = off");
            assertThat(h.createQuery("SELECT length('\\'')")
                            .mapTo(Integer.class)
                            .one())
                    .as("the same quote now stays inside the string")
                    .isEqualTo(1);
            assertThatThrownBy(() -> h.createQuery("SELECT U&'\\0061'")
                            .mapTo(String.class)
                            .one())
                    .isInstanceOf(UnableToExecuteStatementException.class)
                    .hasMessageContaining("Unicode escapes");
        });
    }
}
