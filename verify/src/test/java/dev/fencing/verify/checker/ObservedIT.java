package dev.fencing.verify.checker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.testsupport.PostgresEndpoint;
import dev.fencing.testsupport.PostgresServers;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What the run's tables hold, read on a real database: a NULL where the checker expects an id, a list, a key, an
 * origin or a reason is not something it can check, and is refused naming the table and the row.
 */
class ObservedIT {
    private static final String SCHEMA = "observed_it";

    private static PostgresEndpoint database;

    @BeforeAll
    static void start() {
        database = PostgresServers.shared().createDatabase("observed_it");
    }

    @AfterAll
    static void stop() {
        database.close();
    }

    @BeforeEach
    void tables() throws SQLException {
        // the contract's columns, without the constraints a workload's own tables may not have
        execute(
                "DROP SCHEMA IF EXISTS " + SCHEMA + " CASCADE",
                "CREATE SCHEMA " + SCHEMA,
                "CREATE TABLE " + SCHEMA + ".resources (resource TEXT, ids BIGINT[])",
                "CREATE TABLE " + SCHEMA + ".applied (record_key TEXT, ids BIGINT[])",
                "CREATE TABLE " + SCHEMA + ".dead_letters (origin_partition INT, origin_offset BIGINT,"
                        + " record_key TEXT, op BIGINT, reason TEXT, detail TEXT)");
    }

    @Test
    void wellFormedTablesAreReadAsTheyAre() throws SQLException {
        execute(
                "INSERT INTO " + SCHEMA + ".resources VALUES ('r1', '{1000001,2000001}')",
                "INSERT INTO " + SCHEMA + ".applied VALUES ('r1', '{1000001}')",
                "INSERT INTO " + SCHEMA + ".dead_letters VALUES (0, 7, 'r1', 2000001, 'STALE_TOKEN', NULL)");

        Observed observed = read();

        assertThat(observed.lists()).containsEntry("r1", List.of(1000001L, 2000001L));
        assertThat(observed.applied()).containsEntry("r1", List.of(1000001L));
        assertThat(observed.deadLetters()).containsExactly(new DeadLetter(2000001L, "r1", "STALE_TOKEN", null, 0, 7));
    }

    @Test
    void aNullIdInAListIsRefusedNamingTheTableTheRowAndThePosition() throws SQLException {
        execute("INSERT INTO " + SCHEMA + ".resources VALUES ('r1', '{1000001,NULL,2000001}')");

        assertThatThrownBy(ObservedIT::read)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(SCHEMA + ".resources")
                .hasMessageContaining("r1")
                .hasMessageContaining("position 2");
    }

    @Test
    void aNullListOrKeyIsRefusedNamingTheTableAndTheRow() throws SQLException {
        execute("INSERT INTO " + SCHEMA + ".applied VALUES ('r2', NULL)");
        assertThatThrownBy(ObservedIT::read)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(SCHEMA + ".applied")
                .hasMessageContaining("r2");

        execute("DELETE FROM " + SCHEMA + ".applied", "INSERT INTO " + SCHEMA + ".resources VALUES (NULL, '{1}')");
        assertThatThrownBy(ObservedIT::read)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(SCHEMA + ".resources")
                .hasMessageContaining("NULL");
    }

    @Test
    void aDeadLetterWithANullOriginOrReasonIsRefusedNamingIt() throws SQLException {
        // read as partition 0, a letter of unknown origin would be placed at the start of partition 0
        execute("INSERT INTO " + SCHEMA + ".dead_letters VALUES (NULL, 7, 'r1', 2000001, 'STALE_TOKEN', NULL)");
        assertThatThrownBy(ObservedIT::read)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(SCHEMA + ".dead_letters")
                .hasMessageContaining("origin_partition")
                .hasMessageContaining("2000001");

        execute(
                "DELETE FROM " + SCHEMA + ".dead_letters",
                "INSERT INTO " + SCHEMA + ".dead_letters VALUES (0, 7, 'r1', 2000001, NULL, NULL)");
        assertThatThrownBy(ObservedIT::read)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(SCHEMA + ".dead_letters")
                .hasMessageContaining("reason");
    }

    private static Observed read() throws SQLException {
        try (Connection connection = database.dataSource().getConnection()) {
            return Observed.read(connection, SCHEMA);
        }
    }

    private static void execute(String... sqls) throws SQLException {
        try (Connection connection = database.dataSource().getConnection();
                Statement statement = connection.createStatement()) {
            for (String sql : sqls) {
                statement.execute(sql);
            }
        }
    }
}
