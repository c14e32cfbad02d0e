package dev.fencing.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * An extra predicate may read tables of the caller's own by their plain names. The reporting statement
 * evaluates the predicate a second time, outside its UPDATE, where the statement's own WITH names are in
 * scope: a table the predicate names as one of them would be read there as the statement's CTE, and the
 * predicate judged otherwise than in the write.
 */
class PredicateTableNamesIT {
    static FencingDatabase db;
    static FencedWriter writer;
    static FencedTable items;

    @BeforeAll
    static void database() {
        db = FencingDatabase.create("predicate_table_names_it", 2);
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE stock_items (sku TEXT PRIMARY KEY, stock INT NOT NULL)");
            h.execute("SELECT fencing.protect_table('stock_items')");
            // the caller's own table: the adjustments already applied
            h.execute("CREATE TABLE applied (sku TEXT NOT NULL)");
        });
        items = FencedTable.builder().table("stock_items").keyColumns("sku").build(db.jdbi);
        writer = FencedWriter.builder(db.jdbi).build();
    }

    @AfterAll
    static void dropDatabase() {
        db.close();
    }

    @BeforeEach
    void resetRows() {
        db.jdbi.useHandle(h -> {
            h.execute("TRUNCATE stock_items, applied");
            h.execute("INSERT INTO stock_items (sku, stock) VALUES ('a-1', 10)");
            h.execute("INSERT INTO applied (sku) VALUES ('a-1')");
        });
    }

    @Test
    void aPredicateOnATableNamedAppliedThatIsFalseReportsPredicateFailed() {
        FencedUpdate once = FencedUpdate.builder(items)
                .key("a-1")
                .setExpression("stock", "stock - 1")
                .where("NOT EXISTS (SELECT 1 FROM applied AS a WHERE a.sku = stock_items.sku)")
                .build();
        assertThat(writer.tryUpdate(once, 5)).isEqualTo(new WriteOutcome.PredicateFailed(0, 5));
        FencedUpdate unlessAny = FencedUpdate.builder(items)
                .key("a-1")
                .setExpression("stock", "stock - 1")
                .where("NOT EXISTS (SELECT 1 FROM applied)")
                .build();
        assertThat(writer.tryUpdate(unlessAny, 5)).isEqualTo(new WriteOutcome.PredicateFailed(0, 5));
        int stock = db.jdbi.withHandle(h -> h.createQuery("SELECT stock FROM stock_items")
                .mapTo(Integer.class)
                .one());
        assertThat(stock).isEqualTo(10);
    }

    @Test
    void aPredicateNamingTheStatementsOwnNamesIsRefused() {
        for (String predicate : new String[] {
            "NOT EXISTS (SELECT 1 FROM fence_applied)",
            "NOT EXISTS (SELECT 1 FROM FENCE_Applied)",
            "NOT EXISTS (SELECT 1 FROM \"fence_applied\")",
            "NOT EXISTS (SELECT 1 FROM U&\"fence\\005fapplied\")",
        }) {
            assertThatThrownBy(() -> FencedUpdate.builder(items).key("a-1").where(predicate))
                    .as(predicate)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("fence_applied");
        }
        // a quoted name that differs from it, a literal that holds it, and a parameter are fine
        FencedUpdate.builder(items).key("a-1").where("NOT EXISTS (SELECT 1 FROM \"Fence_applied\")");
        FencedUpdate.builder(items).key("a-1").where("stock_items.sku <> 'fence_applied'");
    }
}
