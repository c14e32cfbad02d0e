package dev.fencing.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.testsupport.PostgresEndpoint;
import dev.fencing.testsupport.PostgresServers;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.FlywayException;
import org.flywaydb.core.api.MigrationInfo;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Each Flyway recipe of docs/jdbc.md, run as written, for both layouts of a service's own migrations (in
 * Flyway's default {@code classpath:db/migration}, and elsewhere), and quiet: Flyway logs no WARN. The
 * toolkit's migrations live in {@code classpath:dev/fencing/db/migration}, outside Flyway's default
 * location, so a service's location never picks them up by accident and its version numbers never collide
 * with the toolkit's unless both share one history.
 */
class FlywayRecipesIT {
    static final String TOOLKIT = "classpath:dev/fencing/db/migration";
    /** Stands in for the toolkit's next release: one more migration, numbered above every released one. */
    static final String NEXT_RELEASE = "classpath:db/toolkit_next";

    private PostgresEndpoint db;

    @BeforeEach
    void createDatabase() {
        db = PostgresServers.shared().createDatabase("recipes_it");
    }

    @AfterEach
    void dropDatabase() {
        db.close();
    }

    /** Flyway's default location holds only the service's migrations: the toolkit's are not inside it. */
    @Test
    void theDefaultLocationDoesNotContainTheToolkitsMigrations() {
        MigrationInfo[] found = Flyway.configure()
                .dataSource(db.jdbcUrl(), db.user(), db.password())
                .locations("classpath:db/migration")
                .load()
                .info()
                .all();

        assertThat(found).extracting(info -> info.getVersion().getVersion()).containsExactly("1000");
    }

    /** Recipe 1, layout 1: yours in classpath:db/migration (from V1000), the toolkit's location named too. */
    @Test
    void oneHistoryWithYoursInTheDefaultLocationNamesBothLocations() throws SQLException {
        String log = warnings(() -> Flyway.configure()
                .dataSource(db.jdbcUrl(), db.user(), db.password())
                .locations("classpath:db/migration", TOOLKIT)
                .load()
                .migrate());

        assertThat(log).doesNotContain("WARN");
        assertThat(history("flyway_schema_history")).startsWith("1", "100").endsWith("1000");
        assertGuarded();
    }

    /** Recipe 1, layout 2: yours elsewhere (from V1000); both locations named, as in layout 1. */
    @Test
    void oneHistoryWithYoursElsewhereNamesBothLocations() throws SQLException {
        String log = warnings(() -> Flyway.configure()
                .dataSource(db.jdbcUrl(), db.user(), db.password())
                .locations("classpath:db/elsewhere", TOOLKIT)
                .load()
                .migrate());

        execute("INSERT INTO inventory VALUES ('A-1', 10)");
        assertThat(log).doesNotContain("WARN");
        assertThat(history("flyway_schema_history")).startsWith("1", "100").endsWith("1000");
        assertGuarded();
    }

    /**
     * Recipe 2: a service already in production with its own history from V1 adopts the toolkit. The
     * toolkit runs first with its history in its own schema, so the service's non-empty schema and its
     * numbering do not matter, and V1 is not skipped by a baseline. The service's files may live anywhere,
     * Flyway's default location included ({@link #theDefaultLocationDoesNotContainTheToolkitsMigrations}).
     */
    @Test
    void separateHistoryInTheFencingSchemaWorksOnAServiceDatabaseNumberedFromOne() throws SQLException {
        // given: the service's database, migrated to its V1 before it adopted the toolkit, with data
        Flyway service = Flyway.configure()
                .dataSource(db.jdbcUrl(), db.user(), db.password())
                .locations("classpath:db/app")
                .target("1")
                .load();
        service.migrate();
        execute("INSERT INTO inventory VALUES ('A-1', 10)");

        // the recipes that do not work: a plain second history on the non-empty schema fails, and with
        // baselineOnMigrate at the default baseline version 1 the toolkit's V1 is skipped (here V100 then
        // fails for want of the fencing schema; without V100 the run would "succeed" with nothing installed)
        assertThatThrownBy(() -> Flyway.configure()
                        .dataSource(db.jdbcUrl(), db.user(), db.password())
                        .locations(TOOLKIT)
                        .table("fencing_schema_history")
                        .load()
                        .migrate())
                .isInstanceOf(FlywayException.class)
                .hasMessageContaining("non-empty schema");
        assertThatThrownBy(() -> Flyway.configure()
                        .dataSource(db.jdbcUrl(), db.user(), db.password())
                        .locations(TOOLKIT)
                        .table("fencing_schema_history")
                        .baselineOnMigrate(true)
                        .load()
                        .migrate())
                .isInstanceOf(FlywayException.class)
                .hasMessageContaining("V100");
        assertThat(queryStrings("SELECT version FROM fencing_schema_history ORDER BY installed_rank"))
                .as("V1 was never run: the baseline took its place")
                .containsExactly("1");
        assertThat(queryStrings("SELECT type FROM fencing_schema_history")).containsExactly("BASELINE");
        execute("DROP TABLE fencing_schema_history");

        // when: the recipe: the toolkit first, its history in schema fencing; then the service as before
        DataSource ds = db.dataSource();
        String log = warnings(() -> {
            Flyway.configure()
                    .dataSource(ds)
                    .schemas("fencing")
                    .locations("classpath:dev/fencing/db/migration")
                    .load()
                    .migrate();
            Flyway.configure()
                    .dataSource(ds)
                    .locations("classpath:db/app")
                    .load()
                    .migrate();
        });

        // then
        assertThat(log).doesNotContain("WARN");
        assertThat(history("fencing.flyway_schema_history")).contains("1", "100");
        assertThat(history("flyway_schema_history")).containsExactly("1", "2");
        assertGuarded();
    }

    /**
     * Recipe 2 with the service's files in Flyway's default location: the toolkit's history in schema
     * fencing, the service's (from V1000 here) in the default schema, both quiet.
     */
    @Test
    void separateHistoriesWithYoursInTheDefaultLocation() throws SQLException {
        DataSource ds = db.dataSource();
        String log = warnings(() -> {
            Flyway.configure()
                    .dataSource(ds)
                    .schemas("fencing")
                    .locations("classpath:dev/fencing/db/migration")
                    .load()
                    .migrate();
            Flyway.configure()
                    .dataSource(ds)
                    .locations("classpath:db/migration")
                    .load()
                    .migrate();
        });

        assertThat(log).doesNotContain("WARN");
        assertThat(history("fencing.flyway_schema_history")).contains("1", "100");
        assertThat(history("flyway_schema_history")).containsExactly("1000");
        assertGuarded();
    }

    /**
     * A later release of the toolkit adds a migration, numbered above every released one (V199, from a
     * stand-in location). With separate histories it simply runs.
     */
    @Test
    void aToolkitUpgradeRunsInTheToolkitsOwnHistory() throws SQLException {
        DataSource ds = db.dataSource();
        for (String[] toolkit : new String[][] {{TOOLKIT}, {TOOLKIT, NEXT_RELEASE}}) {
            Flyway.configure()
                    .dataSource(ds)
                    .schemas("fencing")
                    .locations(toolkit)
                    .load()
                    .migrate();
            Flyway.configure()
                    .dataSource(ds)
                    .locations("classpath:db/migration")
                    .load()
                    .migrate();
        }

        assertThat(history("fencing.flyway_schema_history"))
                .containsExactly("1", "100", "101", "102", "103", "104", "199");
        assertThat(history("flyway_schema_history")).containsExactly("1000");
        assertGuarded();
    }

    /**
     * In one history the toolkit's new V199 sorts below the service's applied V1000: Flyway refuses to
     * migrate until it may run migrations out of order.
     */
    @Test
    void aToolkitUpgradeInOneHistoryNeedsOutOfOrder() throws SQLException {
        Flyway.configure()
                .dataSource(db.jdbcUrl(), db.user(), db.password())
                .locations("classpath:db/migration", TOOLKIT)
                .load()
                .migrate();

        assertThatThrownBy(() -> Flyway.configure()
                        .dataSource(db.jdbcUrl(), db.user(), db.password())
                        .locations("classpath:db/migration", TOOLKIT, NEXT_RELEASE)
                        .load()
                        .migrate())
                .isInstanceOf(FlywayException.class)
                .hasMessageContaining("Detected resolved migration not applied to database: 199")
                .hasMessageContaining("outOfOrder");
        Flyway.configure()
                .dataSource(db.jdbcUrl(), db.user(), db.password())
                .locations("classpath:db/migration", TOOLKIT, NEXT_RELEASE)
                .outOfOrder(true)
                .load()
                .migrate();

        assertThat(history("flyway_schema_history"))
                .containsExactly("1", "100", "101", "102", "103", "104", "1000", "199");
    }

    /**
     * Why the toolkit numbers its migrations in one sequence, whichever module they serve: a new migration
     * numbered below a released one (a V2 after V100) is refused on every database that has V100, even in
     * the toolkit's own history.
     */
    @Test
    void aToolkitMigrationNumberedBelowAReleasedOneIsRefusedEvenInItsOwnHistory() {
        Flyway.configure()
                .dataSource(db.dataSource())
                .schemas("fencing")
                .locations(TOOLKIT)
                .load()
                .migrate();

        assertThatThrownBy(() -> Flyway.configure()
                        .dataSource(db.dataSource())
                        .schemas("fencing")
                        .locations(TOOLKIT, "classpath:db/toolkit_below")
                        .load()
                        .migrate())
                .isInstanceOf(FlywayException.class)
                .hasMessageContaining("Detected resolved migration not applied to database: 2");
    }

    /** The guard is on inventory: a raw UPDATE lowering the token is refused. */
    private void assertGuarded() throws SQLException {
        execute("INSERT INTO inventory VALUES ('G-1', 1) ON CONFLICT DO NOTHING");
        execute("UPDATE inventory SET last_fence_token = 5 WHERE sku = 'G-1'");
        assertThatThrownBy(() -> execute("UPDATE inventory SET last_fence_token = 4 WHERE sku = 'G-1'"))
                .hasMessageContaining("stored token 5, offered token 4");
    }

    /** Runs the migration with System.err captured (slf4j-simple, the tests' binding, logs there). */
    private static String warnings(Runnable migration) {
        PrintStream original = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            migration.run(); // a failed migration throws
        } finally {
            System.setErr(original);
        }
        String log = captured.toString(StandardCharsets.UTF_8);
        original.print(log);
        return log;
    }

    private List<String> history(String table) throws SQLException {
        return queryStrings("SELECT version FROM " + table + " WHERE version IS NOT NULL AND success"
                + " AND type <> 'SCHEMA' ORDER BY installed_rank");
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
