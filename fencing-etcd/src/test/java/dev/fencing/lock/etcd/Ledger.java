package dev.fencing.lock.etcd;

import dev.fencing.jdbc.FencedTable;
import dev.fencing.jdbc.FencedUpdate;
import dev.fencing.jdbc.FencedWriter;
import dev.fencing.jdbc.WriteOutcome;
import dev.fencing.testsupport.PostgresEndpoint;
import org.flywaydb.core.Flyway;
import org.jdbi.v3.core.Jdbi;

/**
 * The resource of the tests in which a holder that lost its lock writes too late: a fresh database migrated with
 * fencing-db's migrations, holding one row ({@link #ROW}) in a table that {@code fencing.protect_table} guards
 * ({@code ledger}: text key {@code name}, int {@code value}, the fence column). The holder's JVM reaches it by
 * URL, user and password, and writes it through {@link #update} (fencing-jdbc) or {@link #writeUnfenced} (a plain
 * UPDATE).
 */
final class Ledger implements AutoCloseable {
    static final String ROW = "main";
    private static final String TABLE = "ledger";

    final PostgresEndpoint database;
    final Jdbi jdbi;
    private final FencedWriter writer;

    private Ledger(PostgresEndpoint database) {
        this.database = database;
        Flyway.configure()
                .dataSource(database.dataSource())
                .locations("classpath:dev/fencing/db/migration")
                .load()
                .migrate();
        this.jdbi = Jdbi.create(database.dataSource());
        jdbi.useHandle(h -> {
            h.execute("CREATE TABLE " + TABLE + " (name TEXT PRIMARY KEY, value INT NOT NULL)");
            h.execute("SELECT fencing.protect_table('" + TABLE + "')");
            h.execute("INSERT INTO " + TABLE + " (name, value) VALUES (?, 0)", ROW);
        });
        this.writer = FencedWriter.builder(jdbi).build();
    }

    /** A database of its own on {@code server}, dropped by {@link #close()}. */
    static Ledger create(PostgresEndpoint server) {
        return new Ledger(server.createDatabase("etcd_ledger"));
    }

    int value() {
        return jdbi.withHandle(h -> h.createQuery("SELECT value FROM " + TABLE + " WHERE name = ?")
                .bind(0, ROW)
                .mapTo(Integer.class)
                .one());
    }

    /** The row's value set through the fence, under {@code token}, from this JVM. */
    WriteOutcome write(int value, long token) {
        return writer.tryUpdate(update(table(jdbi), value), token);
    }

    static FencedTable table(Jdbi jdbi) {
        return FencedTable.builder().table(TABLE).keyColumns("name").build(jdbi);
    }

    /** Sets the row's value through the fence: applied only when the writer's policy admits the token. */
    static FencedUpdate update(FencedTable table, int value) {
        return FencedUpdate.builder(table).key(ROW).set("value", value).build();
    }

    /** The same write without the fence: a plain UPDATE, as a writer without the library sends it. */
    static int writeUnfenced(Jdbi jdbi, int value) {
        return jdbi.withHandle(h -> h.createUpdate("UPDATE " + TABLE + " SET value = :value WHERE name = :name")
                .bind("value", value)
                .bind("name", ROW)
                .execute());
    }

    @Override
    public void close() {
        database.close();
    }
}
