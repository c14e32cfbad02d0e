package dev.fencing.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.SQLException;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.statement.UnableToExecuteStatementException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue test 3: a writer that bypasses the library with raw SQL cannot lower a protected row's token: the
 * fencing-db module's guard trigger refuses it, naming table, key, stored and offered token; the same statement
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
        // an upsert's DO UPDATE, and an UPDATE that also moves the row to another key, are UPDATEs too
        assertThatThrownBy(() -> db.jdbi.useHandle(h -> h.execute("INSERT INTO inventory (sku, stock, last_fence_token)"
                        + " VALUES ('A-1', 0, 3) ON CONFLICT (sku) DO UPDATE SET stock = 0,"
                        + " last_fence_token = EXCLUDED.last_fence_token")))
                .hasMessageContaining("stored token 9, offered token 3");
        assertThatThrownBy(() -> db.jdbi.useHandle(
                        h -> h.execute("UPDATE inventory SET sku = 'B-1', last_fence_token = 3 WHERE sku = 'A-1'")))
                .hasMessageContaining("stored token 9, offered token 3");
        assertThat(db.row("A-1")).isEqualTo("7:9");

        int applied = db.jdbi.withHandle(h -> h.execute(String.format(LOWER, "inventory_plain")));
        assertThat(applied).isEqualTo(1);
        String twin = db.jdbi.withHandle(
                h -> h.createQuery("SELECT stock || ':' || last_fence_token FROM inventory_plain WHERE sku = 'A-1'")
                        .mapTo(String.class)
                        .one());
        assertThat(twin).isEqualTo("0:3");
    }

    /**
     * PostgreSQL fires BEFORE triggers in name order: a user's trigger named after {@code fencing_guard}
     * runs after a BEFORE guard and can lower the token it had checked. The guard is an AFTER trigger, so
     * it sees the row as stored.
     */
    @Test
    void aUserTriggerThatFiresAfterTheGuardInNameOrderCannotLowerTheToken() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE FUNCTION lower_token() RETURNS trigger LANGUAGE plpgsql AS"
                    + " $$ BEGIN NEW.last_fence_token := 1; RETURN NEW; END $$");
            h.execute("CREATE TRIGGER zz_lower_token BEFORE UPDATE ON inventory FOR EACH ROW"
                    + " EXECUTE FUNCTION lower_token()");
            h.execute("CREATE TRIGGER zz_lower_token BEFORE UPDATE ON inventory_plain FOR EACH ROW"
                    + " EXECUTE FUNCTION lower_token()");
        });
        try {
            // a raw update that raises the token, and a fenced one under a fresh token
            assertThatThrownBy(() -> db.jdbi.useHandle(
                            h -> h.execute("UPDATE inventory SET stock = 0, last_fence_token = 10 WHERE sku = 'A-1'")))
                    .hasMessageContaining("stored token 9, offered token 1");
            FencedWriter writer = FencedWriter.builder(db.jdbi).build();
            FencedUpdate update = FencedUpdate.builder(db.inventory())
                    .key("A-1")
                    .set("stock", 0)
                    .build();
            assertThatThrownBy(() -> writer.tryUpdate(update, 11))
                    .isInstanceOf(FencedWriteException.class)
                    .hasMessageContaining("stored token 9, offered token 1");
            assertThat(db.row("A-1")).isEqualTo("7:9");

            // the unprotected twin: the same trigger takes the row back to token 1
            db.jdbi.useHandle(
                    h -> h.execute("UPDATE inventory_plain SET stock = 0, last_fence_token = 10 WHERE sku = 'A-1'"));
            assertThat(plainRow()).isEqualTo("0:1");
        } finally {
            db.jdbi.useHandle(h -> {
                h.execute("DROP TRIGGER zz_lower_token ON inventory");
                h.execute("DROP TRIGGER zz_lower_token ON inventory_plain");
                h.execute("DROP FUNCTION lower_token()");
            });
        }
    }

    /**
     * A trigger function runs with the search_path of the session that issues the UPDATE. A session that
     * puts its own schema first could shadow {@code to_jsonb} (or {@code >=}) and make every row read as
     * token 0, so that any lowering passes; the guard's own search_path keeps the catalog's functions.
     */
    @Test
    void aSessionThatShadowsTheGuardsFunctionsCannotLowerTheToken() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE SCHEMA IF NOT EXISTS shadow");
            h.execute("CREATE OR REPLACE FUNCTION shadow.to_jsonb(anyelement) RETURNS jsonb LANGUAGE sql AS"
                    + " $$ SELECT '{\"last_fence_token\": 0}'::jsonb $$");
        });
        try {
            assertThatThrownBy(() -> db.jdbi.useHandle(h -> {
                        h.execute("SET search_path = shadow, pg_catalog, public");
                        try {
                            h.execute(String.format(LOWER, "inventory"));
                        } finally {
                            h.execute("RESET search_path");
                        }
                    }))
                    .hasMessageContaining("stored token 9, offered token 3");
            assertThat(db.row("A-1")).isEqualTo("7:9");
        } finally {
            db.jdbi.useHandle(h -> h.execute("DROP SCHEMA shadow CASCADE"));
        }
    }

    @Test
    void aTableGuardedByABeforeTriggerOfAnEarlierVersionIsNotReportedAsGuarded() {
        assertThat(db.inventory().guarded()).isTrue();
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE legacy (sku TEXT PRIMARY KEY, last_fence_token BIGINT NOT NULL DEFAULT 0)");
            h.execute("CREATE TRIGGER fencing_guard BEFORE UPDATE ON legacy FOR EACH ROW"
                    + " WHEN (NEW.last_fence_token < OLD.last_fence_token)"
                    + " EXECUTE FUNCTION fencing.guard_fence_token('last_fence_token', 'sku')");
        });
        try {
            FencedTable.Builder legacy = FencedTable.builder().table("legacy").keyColumns("sku");
            assertThat(legacy.build(db.jdbi).guarded()).isFalse();
            db.jdbi.useHandle(h -> h.execute("SELECT fencing.protect_table('legacy')"));
            assertThat(legacy.build(db.jdbi).guarded())
                    .as("protect_table replaced it")
                    .isTrue();
        } finally {
            db.jdbi.useHandle(h -> h.execute("DROP TABLE legacy"));
        }
    }

    /**
     * A guard that does not fire for ordinary sessions (enabled for replicas only) or that guards another
     * column is no guard of this table's fence column.
     */
    @Test
    void aGuardThatDoesNotFireForOrdinarySessionsOrGuardsAnotherColumnIsNotReportedAsGuarded() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE legacy (sku TEXT PRIMARY KEY, last_fence_token BIGINT NOT NULL DEFAULT 0,"
                    + " other_token BIGINT NOT NULL DEFAULT 0)");
            h.execute("SELECT fencing.protect_table('legacy')");
        });
        try {
            FencedTable.Builder legacy = FencedTable.builder().table("legacy").keyColumns("sku");
            assertThat(legacy.build(db.jdbi).guarded()).isTrue();

            db.jdbi.useHandle(h -> h.execute("ALTER TABLE legacy ENABLE REPLICA TRIGGER fencing_guard"));
            assertThat(legacy.build(db.jdbi).guarded())
                    .as("fires for replicas only")
                    .isFalse();
            db.jdbi.useHandle(h -> {
                h.execute("INSERT INTO legacy (sku, last_fence_token) VALUES ('A-1', 9)");
                h.execute("UPDATE legacy SET last_fence_token = 1 WHERE sku = 'A-1'");
            });

            db.jdbi.useHandle(h -> h.execute("SELECT fencing.protect_table('legacy', NULL, 'other_token')"));
            assertThat(legacy.build(db.jdbi).guarded()).as("guards other_token").isFalse();
            assertThat(legacy.fenceColumn("other_token").build(db.jdbi).guarded())
                    .isTrue();
        } finally {
            db.jdbi.useHandle(h -> h.execute("DROP TABLE legacy"));
        }
    }

    /**
     * A guard that fires only for an UPDATE naming some columns ({@code AFTER UPDATE OF stock}) is no guard of the
     * fence column: an UPDATE that sets only the token, lower, goes through it.
     */
    @Test
    void aGuardThatFiresOnlyForUpdatesOfSomeColumnsIsNotReportedAsGuarded() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE legacy (sku TEXT PRIMARY KEY, stock INT NOT NULL DEFAULT 0,"
                    + " last_fence_token BIGINT NOT NULL DEFAULT 0)");
            h.execute("CREATE TRIGGER fencing_guard AFTER UPDATE OF stock ON legacy FOR EACH ROW"
                    + " WHEN (NEW.last_fence_token < OLD.last_fence_token)"
                    + " EXECUTE FUNCTION fencing.guard_fence_token('last_fence_token', 'sku')");
            h.execute("INSERT INTO legacy (sku, last_fence_token) VALUES ('A-1', 9)");
        });
        try {
            FencedTable.Builder legacy = FencedTable.builder().table("legacy").keyColumns("sku");
            lowerPastTheGuardThenProtect(legacy, "UPDATE legacy SET last_fence_token = 1 WHERE sku = 'A-1'");
        } finally {
            db.jdbi.useHandle(h -> h.execute("DROP TABLE legacy"));
        }
    }

    /**
     * A guard whose WHEN clause is not the comparison {@code fencing.protect_table} writes lets an UPDATE that
     * lowers the token through whenever its clause is false ({@code ... AND NEW.stock > 0}: an UPDATE that also
     * empties the stock), and a fenced-kafka row handler took such a table as guarded. Also when the clause's
     * {@code <} is one the session's search path finds before pg_catalog's, which the trigger's definition shows as
     * a bare {@code <}; the guard as installed is one in every session, whatever its search path.
     */
    @Test
    void aGuardWhoseWhenClauseIsAnotherComparisonIsNotReportedAsGuarded() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE legacy (sku TEXT PRIMARY KEY, stock INT NOT NULL DEFAULT 0,"
                    + " last_fence_token BIGINT NOT NULL DEFAULT 0)");
            h.execute("CREATE TRIGGER fencing_guard AFTER UPDATE ON legacy FOR EACH ROW"
                    + " WHEN (NEW.last_fence_token < OLD.last_fence_token AND NEW.stock > 0)"
                    + " EXECUTE FUNCTION fencing.guard_fence_token('last_fence_token', 'sku')");
            h.execute("INSERT INTO legacy (sku, stock, last_fence_token) VALUES ('A-1', 7, 9)");
            h.execute("CREATE SCHEMA IF NOT EXISTS lenient");
            h.execute("CREATE FUNCTION lenient.never(bigint, bigint) RETURNS boolean"
                    + " LANGUAGE sql IMMUTABLE AS 'SELECT false'");
            h.execute("CREATE OPERATOR lenient.< (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = lenient.never)");
        });
        try {
            FencedTable.Builder legacy = FencedTable.builder().table("legacy").keyColumns("sku");
            lowerPastTheGuardThenProtect(legacy, "UPDATE legacy SET stock = 0, last_fence_token = 1 WHERE sku = 'A-1'");
            assertThat(db.jdbi.<Boolean, RuntimeException>withHandle(h -> {
                        h.execute("SET search_path = lenient, pg_catalog, public");
                        try {
                            return legacy.build(h).guarded();
                        } finally {
                            h.execute("RESET search_path");
                        }
                    }))
                    .as("the guard as installed, read in a session whose search path finds lenient.< first")
                    .isTrue();

            // the same clause with the lenient <, which that session's trigger definition shows as a bare <
            db.jdbi.useHandle(h -> {
                h.execute("DROP TRIGGER fencing_guard ON legacy");
                h.execute("CREATE TRIGGER fencing_guard AFTER UPDATE ON legacy FOR EACH ROW"
                        + " WHEN (NEW.last_fence_token OPERATOR(lenient.<) OLD.last_fence_token)"
                        + " EXECUTE FUNCTION fencing.guard_fence_token('last_fence_token', 'sku')");
                h.execute("UPDATE legacy SET last_fence_token = 0 WHERE sku = 'A-1'");
            });
            assertThat(legacy.build(db.jdbi).guarded()).as("lenient.<").isFalse();
            assertThat(db.jdbi.<Boolean, RuntimeException>withHandle(h -> {
                        h.execute("SET search_path = lenient, pg_catalog, public");
                        try {
                            return legacy.build(h).guarded();
                        } finally {
                            h.execute("RESET search_path");
                        }
                    }))
                    .as("lenient.<, read in a session whose search path finds it first")
                    .isFalse();
        } finally {
            db.jdbi.useHandle(h -> {
                h.execute("DROP TABLE legacy");
                h.execute("DROP SCHEMA lenient CASCADE");
            });
        }
    }

    /**
     * A session with {@code session_replication_role = replica} (a superuser's: logical replication's apply
     * workers run as one) skips ordinary triggers, the guard as it is installed too: a subscriber applies what its
     * origin's guard accepted. The fenced statements check the token themselves, in every session. A guard its
     * owner set to {@code ENABLE ALWAYS} fires in replica sessions too, is a guard to {@link FencedTable}, and stays
     * so when the table is protected again (which recreates the trigger).
     */
    @Test
    void aReplicaSessionSkipsTheGuardUnlessItIsEnabledAlwaysAndProtectingAgainKeepsThat() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE TABLE replicated (sku TEXT PRIMARY KEY, stock INT NOT NULL)");
            h.execute("SELECT fencing.protect_table('replicated')");
            h.execute("INSERT INTO replicated (sku, stock, last_fence_token) VALUES ('A-1', 7, 9)");
        });
        String lower = "UPDATE replicated SET stock = 0, last_fence_token = 3 WHERE sku = 'A-1'";
        String restore = "UPDATE replicated SET stock = 7, last_fence_token = 9 WHERE sku = 'A-1'";
        FencedWriter writer = FencedWriter.builder(db.jdbi).build();
        try (Handle replica = db.jdbi.open()) {
            replica.execute("SET session_replication_role = replica");
            try {
                FencedTable replicated = FencedTable.builder()
                        .table("replicated")
                        .keyColumns("sku")
                        .build(db.jdbi);
                assertThat(replicated.guarded()).isTrue();
                assertThat(writer.tryUpdate(
                                replica,
                                FencedUpdate.builder(replicated)
                                        .key("A-1")
                                        .set("stock", 1)
                                        .build(),
                                5))
                        .as("the fenced statement checks the token itself")
                        .isEqualTo(new WriteOutcome.Rejected(9, 5));
                assertThat(replica.execute(lower))
                        .as("the guard as installed does not fire in a replica session")
                        .isEqualTo(1);
                db.jdbi.useHandle(h -> h.execute(restore));

                db.jdbi.useHandle(h -> h.execute("ALTER TABLE replicated ENABLE ALWAYS TRIGGER fencing_guard"));
                assertThat(FencedTable.builder()
                                .table("replicated")
                                .keyColumns("sku")
                                .build(db.jdbi)
                                .guarded())
                        .isTrue();
                assertThatThrownBy(() -> replica.execute(lower))
                        .hasMessageContaining("stored token 9, offered token 3");

                db.jdbi.useHandle(h -> h.execute("SELECT fencing.protect_table('replicated')"));
                assertThatThrownBy(() -> replica.execute(lower))
                        .as("protected again, the guard still fires in a replica session")
                        .hasMessageContaining("stored token 9, offered token 3");
                assertThat(replicatedRow()).isEqualTo("7:9");
            } finally {
                // the pool's connection goes back as it came
                replica.execute("RESET session_replication_role");
            }
        } finally {
            db.jdbi.useHandle(h -> h.execute("DROP TABLE replicated"));
        }
    }

    private static String replicatedRow() {
        return db.jdbi.withHandle(
                h -> h.createQuery("SELECT stock || ':' || last_fence_token FROM replicated WHERE sku = 'A-1'")
                        .mapTo(String.class)
                        .one());
    }

    /**
     * A BEFORE trigger that returns NULL skips the row: the write admits the token but writes nothing, every
     * time. That is a failure naming the likely cause, never an outcome.
     */
    @Test
    void aUserTriggerThatSkipsTheRowFailsTheWriteWithAMessageNamingIt() {
        db.jdbi.useHandle(h -> {
            h.execute("CREATE FUNCTION skip_row() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$");
            h.execute("CREATE TRIGGER skip_row BEFORE UPDATE ON inventory FOR EACH ROW EXECUTE FUNCTION skip_row()");
        });
        try {
            FencedWriter writer = FencedWriter.builder(db.jdbi).build();
            FencedUpdate update = FencedUpdate.builder(db.inventory())
                    .key("A-1")
                    .set("stock", 0)
                    .build();
            assertThatThrownBy(() -> writer.tryUpdate(update, 11))
                    .isInstanceOf(FencedWriteException.class)
                    .hasMessageContaining("BEFORE trigger that returns NULL");
            assertThat(db.row("A-1")).isEqualTo("7:9");
        } finally {
            db.jdbi.useHandle(h -> {
                h.execute("DROP TRIGGER skip_row ON inventory");
                h.execute("DROP FUNCTION skip_row()");
            });
        }
    }

    private static String plainRow() {
        return db.jdbi.withHandle(
                h -> h.createQuery("SELECT stock || ':' || last_fence_token FROM inventory_plain WHERE sku = 'A-1'")
                        .mapTo(String.class)
                        .one());
    }

    @Test
    void rawUpdatesThatKeepOrRaiseTheTokenStillPass() {
        db.jdbi.useHandle(h -> {
            h.execute("UPDATE inventory SET stock = 6 WHERE sku = 'A-1'");
            h.execute("UPDATE inventory SET stock = 5, last_fence_token = 10 WHERE sku = 'A-1'");
        });
        assertThat(db.row("A-1")).isEqualTo("5:10");
    }

    /**
     * Lowers the token of legacy's row A-1 from 9 to 1 with {@code update}, which the table's guard lets through,
     * and checks that the table reads as unguarded until {@code fencing.protect_table} replaces that guard.
     */
    private static void lowerPastTheGuardThenProtect(FencedTable.Builder legacy, String update) {
        db.jdbi.useHandle(h -> h.execute(update));
        long stored = db.jdbi.withHandle(h -> h.createQuery("SELECT last_fence_token FROM legacy")
                .mapTo(Long.class)
                .one());
        assertThat(stored).as("lowered past the guard").isEqualTo(1L);
        assertThat(legacy.build(db.jdbi).guarded()).isFalse();

        db.jdbi.useHandle(h -> h.execute("SELECT fencing.protect_table('legacy')"));
        assertThat(legacy.build(db.jdbi).guarded())
                .as("protect_table replaced it")
                .isTrue();
    }
}
