package dev.fencing.jdbc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.jdbi.v3.core.statement.ParsedSql;
import org.junit.jupiter.api.Test;

class StatementParserTest {

    @Test
    void replacesOnlyTheParametersPostgresReadsOutsideLiteralsAndKeepsEveryOtherCharacter() {
        String sql = "UPDATE t SET a = (E'\\\\' || $$:ghost \\' $$), b = :x::text"
                + " WHERE k = CAST(:fence_key_0 AS text) AND \"c:d\" <> ':y' AND e = :x";

        ParsedSql parsed = StatementParser.parse(sql);

        assertThat(parsed.getSql())
                .isEqualTo("UPDATE t SET a = (E'\\\\' || $$:ghost \\' $$), b = ?::text"
                        + " WHERE k = CAST(? AS text) AND \"c:d\" <> ':y' AND e = ?");
        assertThat(parsed.getParameters().getParameterNames()).containsExactly("x", "fence_key_0", "x");
    }
}
