package dev.fencing.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.testsupport.PostgresEndpoint;
import dev.fencing.testsupport.PostgresServers;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.output.MigrateResult;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The fencing-db module's migrations against a real PostgreSQL: empty database, existing data, migrating twice. */
class FencingMigrationIT {
    static final String LOCATION = "classpath:dev/fencing/db/migration";

    private PostgresEndpoint db;

    @BeforeEach
    void createDatabase() {
        db = PostgresServers.shared().createDatabase("migration_it");
    }

    @AfterEach
    void dropDatabase() {
        db.close();
    }

    @Test
    void migratesAnEmptyDatabaseAndAGuardedWatermarkRefusesToGoBack() throws SQLException {
        MigrateResult result = flyway(LOCATION).migrate();

        assertThat(result.success).isTrue();
        assertThat(queryStrings("SELECT column_name || ' ' || data_type || ' ' || is_nullable"
                        + " FROM information_schema.columns WHERE table_schema = 'fencing' AND table_name = 'watermark'"
                        + " ORDER BY ordinal_position"))
                .containsExactly(
                        "resource_key text NO", "fence_token bigint NO", "updated_at timestamp with time zone NO");
        execute("INSERT INTO fencing.watermark (resource_key, fence_token) VALUES ('report', 9)");
        assertThatThrownBy(() -> execute("UPDATE fencing.watermark SET fence_token = 3 WHERE resource_key = 'report'"))
                .isInstanceOf(SQLException.class)
                .satisfies(e -> assertThat(((SQLException) e).getSQLState()).isEqualTo("FE001"))
                .hasMessageContaining("fencing.watermark")
                .hasMessageContaining("resource_key=report")
                .hasMessageContaining("stored token 9")
                .hasMessageContaining("offered token 3");
        assertThatThrownBy(() -> execute("INSERT INTO fencing.watermark (resource_key, fence_token) VALUES ('x', 0)"))
                .isInstanceOf(SQLException.class)
                .hasMessageContaining("check");
    }

    @Test
    void protectsATableThatAlreadyHoldsDataAndMigratingTwiceChangesNothing() throws SQLException {
        // given: a database in use before it adopted the fencing migrations
        execute("CREATE TABLE inventory (sku TEXT PRIMARY KEY, stock INT NOT NULL)");
        execute("INSERT INTO inventory VALUES ('A-1', 10), ('A-2', 20)");

        // when: the service adds the fencing location beside its own migrations
        MigrateResult first = flyway(LOCATION, "classpath:db/service_it").migrate();
        MigrateResult second = flyway(LOCATION, "classpath:db/service_it").migrate();

        // then
        // V1 and the service's V1000, plus whatever else the fencing folder ships (fencing-kafka's V100)
        assertThat(first.migrationsExecuted).isGreaterThanOrEqualTo(2);
        assertThat(first.targetSchemaVersion).isEqualTo("1000");
        assertThat(second.migrationsExecuted).isZero();
        assertThat(queryStrings("SELECT sku || ':' || stock || ':' || last_fence_token FROM inventory ORDER BY sku"))
                .containsExactly("A-1:10:0", "A-2:20:0");
        execute("UPDATE inventory SET stock = 9, last_fence_token = 5 WHERE sku = 'A-1'");
        assertThatThrownBy(() -> execute("UPDATE inventory SET stock = 8, last_fence_token = 4 WHERE sku = 'A-1'"))
                .hasMessageContaining("public.inventory row (sku=A-1): stored token 5, offered token 4");
        execute("SELECT fencing.protect_table('inventory')"); // idempotent when called again
        assertThat(queryStrings("SELECT count(*)::text FROM pg_trigger WHERE tgname = 'fencing_guard'"
                        + " AND tgrelid = 'inventory'::regclass"))
                .containsExactly("1");
    }

    private Flyway flyway(String... locations) {
        return Flyway.configure()
                .dataSource(db.jdbcUrl(), db.user(), db.password())
                .locations(locations)
                .baselineOnMigrate(true)
                .baselineVersion("0")
                .load();
    }

    private void execute(String sql) throws SQLException {
        try (Connection connection = db.dataSource().getConnection();
                Statement statement = connection.createStatement()) {
            statement.execute(sql);
        }
    }

    private List<String> queryStrings(String sql) throws SQLException {
        try (Connection connection = db.dataSource().getConnection();
                Statement statement = connection.createStatement();
                ResultSet rs = statement.executeQuery(sql)) {
            List<String> values = new ArrayList<>();
            while (rs.next()) {
                values.add(rs.getString(1));
            }
            return values;
        }
    }
}
