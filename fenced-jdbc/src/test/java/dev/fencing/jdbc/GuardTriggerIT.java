package dev.fencing.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.SQLException;
import org.jdbi.v3.core.statement.UnableToExecuteStatementException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue test 3: a writer that bypasses the library with raw SQL cannot lower a protected row's token: the
 * db module's guard trigger refuses it, naming table, key, stored and offered token; the same statement
 * on the unprotected twin table goes through.
 */
class GuardTriggerIT {
    static final String LOWER = "UPDATE %s SET stock = 0, last_fence_token = 3 WHERE sku = 'A-1'";

    static FencingDatabase db;

    @BeforeAll
    static void database() {
        db = FencingDatabase.create("guard_it", 2);
    }

    @AfterAll
    static void dropDatabase() {
        db.close();
    }

    @BeforeEach
    void rows() {
        db.reset("A-1");
        db.jdbi.useHandle(h -> {
            h.execute("UPDATE inventory SET stock = 7, last_fence_token = 9 WHERE sku = 'A-1'");
            h.execute("UPDATE inventory_plain SET stock = 7, last_fence_token = 9 WHERE sku = 'A-1'");
        });
    }

    @Test
    void rawUpdateLoweringTheTokenIsRefusedOnTheProtectedTableAndAppliedOnItsUnprotectedTwin() {
        assertThatThrownBy(() -> db.jdbi.useHandle(h -> h.execute(String.format(LOWER, "inventory"))))
                .isInstanceOf(UnableToExecuteStatementException.class)
                .cause()
                .isInstanceOfSatisfying(
                        SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("FE001"))
                .hasMessageContaining(
                        "stale fence token refused on table public.inventory row (sku=A-1): stored token 9, offered token 3");
        assertThat(db.row("A-1")).isEqualTo("7:9");

        int applied = db.jdbi.withHandle(h -> h.execute(String.format(LOWER, "inventory_plain")));
        assertThat(applied).isEqualTo(1);
        String twin = db.jdbi.withHandle(
                h -> h.createQuery("SELECT stock || ':' || last_fence_token FROM inventory_plain WHERE sku = 'A-1'")
                        .mapTo(String.class)
                        .one());
        assertThat(twin).isEqualTo("0:3");
    }

    @Test
    void rawUpdatesThatKeepOrRaiseTheTokenStillPass() {
        db.jdbi.useHandle(h -> {
            h.execute("UPDATE inventory SET stock = 6 WHERE sku = 'A-1'");
            h.execute("UPDATE inventory SET stock = 5, last_fence_token = 10 WHERE sku = 'A-1'");
        });
        assertThat(db.row("A-1")).isEqualTo("5:10");
    }
}
