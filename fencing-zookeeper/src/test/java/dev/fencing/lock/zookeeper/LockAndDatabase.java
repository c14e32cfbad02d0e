package dev.fencing.lock.zookeeper;

import dev.fencing.jdbc.FencedTable;
import dev.fencing.testsupport.PostgresEndpoint;
import dev.fencing.testsupport.PostgresServers;
import dev.fencing.testsupport.ZooKeeperEndpoint;
import dev.fencing.testsupport.ZooKeeperServers;
import org.jdbi.v3.core.Jdbi;

/**
 * A ZooKeeper server and a database with one fenced table, for the tests that show a late write refused
 * end to end. The table has a text key {@code name}, an int column {@code value} and the fence column.
 */
final class LockAndDatabase implements AutoCloseable {
    final ZooKeeperEndpoint zk;
    final PostgresEndpoint database;
    final Jdbi jdbi;
    final FencedTable table;

    private LockAndDatabase(String databaseName, String tableName) {
        this.zk = ZooKeeperServers.start();
        this.database = PostgresServers.shared().createDatabase(databaseName);
        this.jdbi = Jdbi.create(database.dataSource());
        jdbi.useHandle(h -> h.execute("CREATE TABLE " + tableName + " (name TEXT PRIMARY KEY, value INT NOT NULL,"
                + " last_fence_token BIGINT NOT NULL DEFAULT 0)"));
        this.table = FencedTable.builder().table(tableName).keyColumns("name").build(jdbi);
    }

    static LockAndDatabase start(String databaseName, String tableName) {
        return new LockAndDatabase(databaseName, tableName);
    }

    /** Puts row {@code name} back to value 0, never written. */
    void reset(String name) {
        jdbi.useHandle(h -> h.createUpdate("INSERT INTO " + table.name() + " (name, value) VALUES (:name, 0)"
                        + " ON CONFLICT (name) DO UPDATE SET value = 0, last_fence_token = 0")
                .bind("name", name)
                .execute());
    }

    int value(String name) {
        return jdbi.withHandle(h -> h.createQuery("SELECT value FROM " + table.name() + " WHERE name = :name")
                .bind("name", name)
                .mapTo(Integer.class)
                .one());
    }

    /** The same write without the fence: a plain UPDATE, as a writer without the library sends it. */
    int writeUnfenced(String name, int value) {
        return jdbi.withHandle(h -> h.createUpdate("UPDATE " + table.name() + " SET value = :value WHERE name = :name")
                .bind("value", value)
                .bind("name", name)
                .execute());
    }

    @Override
    public void close() {
        database.close();
        zk.close();
    }
}
