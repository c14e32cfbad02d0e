package dev.fencing.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Keys of type {@code char(n)}: bound values are cast to the column's type, and a bare {@code character}
 * means {@code char(1)}, which would truncate 'ABC' to 'A' and write the wrong row.
 */
class CharKeyIT {
    static FencingDatabase db;

    @BeforeAll
    static void database() {
        db = FencingDatabase.create("char_key_it", 2);
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE parts (code CHAR(3) PRIMARY KEY, label CHAR(3) NOT NULL)");
            h.execute("SELECT fencing.protect_table('parts')");
            h.execute("INSERT INTO parts (code, label, last_fence_token) VALUES ('A', 'a', 2), ('ABC', 'abc', 3)");
        });
    }

    @AfterAll
    static void dropDatabase() {
        db.close();
    }

    @Test
    void aFencedUpdateOfAThreeCharacterKeyWritesThatRowAndNoOther() {
        FencedTable parts =
                FencedTable.builder().table("parts").keyColumns("code").build(db.jdbi);
        FencedWriter writer = FencedWriter.builder(db.jdbi).build();

        WriteOutcome outcome = writer.tryUpdate(
                FencedUpdate.builder(parts).key("ABC").set("label", "new").build(), 5);

        assertThat(outcome.isApplied()).isTrue();
        Map<String, String> rows = db.jdbi.withHandle(
                h -> h.createQuery("SELECT trim(code) AS code, trim(label) || ':' || last_fence_token AS v FROM parts")
                        .setMapKeyColumn("code")
                        .setMapValueColumn("v")
                        .collectInto(new org.jdbi.v3.core.generic.GenericType<Map<String, String>>() {}));
        assertThat(rows).containsEntry("ABC", "new:5").containsEntry("A", "a:2");
    }

    /**
     * A batch value the database cannot read as its column's type fails the batch, and PostgreSQL's error quotes
     * the value but names no column: the writer names the first column whose value travels as that text, leaving
     * out columns of a text type, which read any text. A {@code char(n)} column is one of them: its key {@code
     * 'bad'} beside a {@code date} value {@code 'bad'} was named as the value the database could not read.
     */
    @Test
    void aBatchValueTheDatabaseCannotReadIsNamedByItsOwnColumnNotByACharKeyOfTheSameText() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE due (code CHAR(3) PRIMARY KEY, day DATE NOT NULL)");
            h.execute("SELECT fencing.protect_table('due')");
            h.execute("INSERT INTO due (code, day, last_fence_token) VALUES ('bad', '2026-01-01', 3)");
        });
        FencedTable due = FencedTable.builder().table("due").keyColumns("code").build(db.jdbi);
        FencedWriter writer = FencedWriter.builder(db.jdbi).build();

        Throwable failure =
                org.assertj.core.api.Assertions.catchThrowable(() -> writer.tryBatch(FencedBatch.builder(due)
                        .columns("day")
                        .add(5, RowKey.of("bad"), "bad")
                        .build()));

        assertThat(failure)
                .isInstanceOf(FencedWriteException.class)
                .hasMessageContaining("column day,")
                .hasMessageNotContaining("column code");
    }
}
