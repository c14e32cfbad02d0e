package dev.fencing.testsupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

class EmbeddedPostgresServerIT {

    @Test
    void aRestartKeepsTheCommittedDataAndThePortAndEndsTheConnectionsOpenBeforeIt() throws SQLException {
        try (EmbeddedPostgresServer pg = EmbeddedPostgresServer.builder().build()) {
            String url = pg.jdbcUrl();
            int port = pg.port();
            DataSource dataSource = pg.dataSource();
            execute(dataSource, "CREATE TABLE kept (n INT)");
            execute(dataSource, "INSERT INTO kept VALUES (1), (2), (3)");

            try (Connection before = dataSource.getConnection();
                    Statement statement = before.createStatement()) {
                before.setAutoCommit(false);
                statement.execute("INSERT INTO kept VALUES (4)"); // never committed

                pg.stop();
                assertThat(pg.isRunning()).isFalse();
                assertThatThrownBy(dataSource::getConnection).isInstanceOf(SQLException.class);
                pg.start();

                assertThat(pg.isRunning()).isTrue();
                assertThat(pg.port()).isEqualTo(port);
                assertThat(pg.jdbcUrl()).isEqualTo(url);
                assertThatThrownBy(() -> statement.execute("INSERT INTO kept VALUES (5)"))
                        .isInstanceOf(SQLException.class)
                        .satisfies(e -> assertThat(((SQLException) e).getSQLState())
                                .as("admin shutdown, or the connection's I/O error")
                                .isIn("57P01", "08006"));
            }
            // the same data source, by the same URL, reaches the server again
            assertThat(count(dataSource)).isEqualTo(3);
        }
    }

    @Test
    void stopAndStartRefuseTheWrongStateAndCloseDeletesTheDataAfterARestart() {
        EmbeddedPostgresServer pg = EmbeddedPostgresServer.builder().build();
        try {
            assertThatThrownBy(pg::start)
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("already running");
            pg.restart();
            pg.stop();
            assertThatThrownBy(pg::stop)
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("not running");
            pg.start();
        } finally {
            pg.close();
            pg.close();
        }
        assertThat(pg.isRunning()).isFalse();
        assertThat(pg.dataDirectory()).doesNotExist();
        assertThatThrownBy(pg::start).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        assertThatThrownBy(() -> pg.dataSource().getConnection()).isInstanceOf(SQLException.class);
    }

    private static void execute(DataSource dataSource, String sql) throws SQLException {
        try (Connection connection = dataSource.getConnection();
                Statement statement = connection.createStatement()) {
            statement.execute(sql);
        }
    }

    private static long count(DataSource dataSource) throws SQLException {
        try (Connection connection = dataSource.getConnection();
                Statement statement = connection.createStatement();
                ResultSet rows = statement.executeQuery("SELECT count(*) FROM kept")) {
            rows.next();
            return rows.getLong(1);
        }
    }
}
