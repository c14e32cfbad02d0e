package dev.fencing.kafka;

import dev.fencing.testsupport.PostgresEndpoint;
import dev.fencing.testsupport.PostgresServers;
import org.flywaydb.core.Flyway;
import org.jdbi.v3.core.Jdbi;

/** A fresh database on the JVM's shared PostgreSQL, migrated with the fencing migrations. */
public final class PostgresFixture implements AutoCloseable {
    public final PostgresEndpoint database;
    public final Jdbi jdbi;

    public PostgresFixture(String prefix) {
        database = PostgresServers.shared().createDatabase(prefix);
        Flyway.configure()
                .dataSource(database.jdbcUrl(), database.user(), database.password())
                .locations("classpath:dev/fencing/db/migration")
                .load()
                .migrate();
        jdbi = Jdbi.create(database.jdbcUrl(), database.user(), database.password());
    }

    @Override
    public void close() {
        database.close();
    }
}
