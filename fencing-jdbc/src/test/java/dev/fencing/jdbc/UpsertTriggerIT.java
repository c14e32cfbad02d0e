package dev.fencing.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A user's BEFORE INSERT trigger that sets the fence column. PostgreSQL runs BEFORE INSERT triggers on an
 * upsert's proposed row before it looks for a conflict, and {@code EXCLUDED} is that row as the triggers left
 * it: an upsert that compared and set {@code EXCLUDED}'s token wrote a stale token's values when the trigger
 * raised the token, and never applied a fresh one to an existing row when it lowered it. The conflict path
 * compares and sets the offered token itself.
 */
class UpsertTriggerIT {
    static FencingDatabase db;
    static FencedTable raised;
    static FencedTable zeroed;

    @BeforeAll
    static void database() {
        db = FencingDatabase.create("upsert_trigger_it", 2);
        db.jdbi.useHandle(h -> {
            for (String table : new String[] {"raised", "zeroed"}) {
                h.execute("CREATE TABLE " + table + " (sku TEXT PRIMARY KEY, stock INT NOT NULL)");
                h.execute("SELECT fencing.protect_table('" + table + "')");
                h.execute("INSERT INTO " + table + " (sku, stock, last_fence_token) VALUES ('A-1', 10, 3)");
            }
            // e.g. an import's trigger that stamps new rows far above any token handed out so far
            h.execute("CREATE FUNCTION raise_token() RETURNS trigger LANGUAGE plpgsql AS"
                    + " $$ BEGIN NEW.last_fence_token := NEW.last_fence_token + 1000; RETURN NEW; END $$");
            h.execute("CREATE TRIGGER raise_token BEFORE INSERT ON raised FOR EACH ROW EXECUTE FUNCTION raise_token()");
            // e.g. a trigger that starts every new row unfenced
            h.execute("CREATE FUNCTION zero_token() RETURNS trigger LANGUAGE plpgsql AS"
                    + " $$ BEGIN NEW.last_fence_token := 0; RETURN NEW; END $$");
            h.execute("CREATE TRIGGER zero_token BEFORE INSERT ON zeroed FOR EACH ROW EXECUTE FUNCTION zero_token()");
        });
        raised = FencedTable.builder().table("raised").keyColumns("sku").build(db.jdbi);
        zeroed = FencedTable.builder().table("zeroed").keyColumns("sku").build(db.jdbi);
    }

    @AfterAll
    static void dropDatabase() {
        db.close();
    }

    @Test
    void aStaleUpsertIsRejectedThoughATriggerRaisesTheProposedRowsToken() {
        FencedWriter writer = FencedWriter.builder(db.jdbi).build();

        WriteOutcome outcome = writer.tryUpsert(
                FencedUpsert.builder(raised).key("A-1").value("stock", 99).build(), 2);

        assertThat(outcome).isEqualTo(new WriteOutcome.Rejected(3, 2));
        assertThat(row("raised")).isEqualTo("10:3");
    }

    @Test
    void aFreshUpsertAppliesToTheStoredRowThoughATriggerZeroesTheProposedRowsToken() {
        FencedWriter writer = FencedWriter.builder(db.jdbi).build();

        WriteOutcome outcome = writer.tryUpsert(
                FencedUpsert.builder(zeroed).key("A-1").value("stock", 7).build(), 5);

        assertThat(outcome).isEqualTo(new WriteOutcome.Applied(5));
        assertThat(row("zeroed")).isEqualTo("7:5");
    }

    private static String row(String table) {
        return db.jdbi.withHandle(
                h -> h.createQuery("SELECT stock || ':' || last_fence_token FROM " + table + " WHERE sku = 'A-1'")
                        .mapTo(String.class)
                        .one());
    }
}
