package dev.fencing.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.FencePolicy;
import dev.fencing.kafka.internal.RecordTransactions;
import dev.fencing.kafka.spi.PartitionProgress;
import dev.fencing.kafka.spi.PartitionState;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;
import org.jdbi.v3.core.ConnectionFactory;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What one unit of work costs the database, counted from pgjdbc's own protocol log: round trips (each {@code
 * Sync} the driver sends waits for the server's answer) and statements ({@code Execute} messages; pgjdbc's
 * own {@code BEGIN}, sent as a simple query in the same message as the statement after it, is neither). The units are the consumer's: a lock, a lazy load, the handler's effect and the
 * save for the serial consumer's unit; the key-parallel consumer's transaction per record. On one connection
 * opened before counting, whose sessions default to SERIALIZABLE, so that the isolation the store asks for
 * is seen to hold.
 */
class PostgresRoundTripsIT {
    private static final TopicPartition P0 = new TopicPartition("orders", 0);
    private static final Logger PROTOCOL = Logger.getLogger("org.postgresql.core.v3.QueryExecutorImpl");
    private static PostgresFixture postgres;
    private Connection connection;
    private Jdbi jdbi;
    private ProtocolCounter counter;
    private Level oldLevel;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_round_trips_it");
        postgres.jdbi.useHandle(h -> h.execute("CREATE TABLE effect (k TEXT PRIMARY KEY, n BIGINT NOT NULL)"));
    }

    @AfterAll
    static void drop() {
        postgres.close();
    }

    @BeforeEach
    void openOneConnection() throws SQLException {
        Properties properties = new Properties();
        properties.setProperty("user", postgres.database.user());
        properties.setProperty("password", postgres.database.password());
        properties.setProperty("options", "-c default_transaction_isolation=serializable");
        connection = DriverManager.getConnection(postgres.database.jdbcUrl(), properties);
        jdbi = Jdbi.create(new ConnectionFactory() {
            @Override
            public Connection openConnection() {
                return connection;
            }

            @Override
            public void closeConnection(Connection toClose) {
                // the test's one connection outlives each handle
            }
        });
        counter = new ProtocolCounter(Thread.currentThread());
        oldLevel = PROTOCOL.getLevel();
        PROTOCOL.setLevel(Level.FINEST);
        PROTOCOL.addHandler(counter);
    }

    @AfterEach
    void closeConnection() throws SQLException {
        PROTOCOL.removeHandler(counter);
        PROTOCOL.setLevel(oldLevel);
        connection.close();
    }

    private static Bytes key(String key) {
        return Bytes.wrap(key.getBytes(StandardCharsets.UTF_8));
    }

    /** One unit as the serial consumer runs it: lock, lazy load, the handler's statement, save. */
    private String[] serialUnit(PostgresWatermarkStore store, String group, long from, Map<Bytes, Long> raised) {
        return serialUnit(store, group, from, raised, Set.of());
    }

    /** {@link #serialUnit} whose progress names {@code newKeys} as keys without a stored watermark. */
    private String[] serialUnit(
            PostgresWatermarkStore store, String group, long from, Map<Bytes, Long> raised, Set<Bytes> newKeys) {
        String[] isolation = new String[1];
        counter.reset();
        store.commit(group, handle -> {
            store.lockPartition(handle, group, P0, from);
            store.loadWatermarks(group, P0, raised.keySet());
            isolation[0] = handle.createQuery("SELECT current_setting('transaction_isolation')")
                    .mapTo(String.class)
                    .one();
            return List.of(new PartitionProgress(P0, from, from + 1, raised, newKeys));
        });
        System.out.printf(
                "serial unit raising %d keys: %d round trips, %d statements:%n  %s%n",
                raised.size(), counter.roundTrips, counter.statements, String.join("\n  ", counter.sent));
        return isolation;
    }

    private static Map<Bytes, Long> tokens(String prefix, int from, int to, long token) {
        Map<Bytes, Long> tokens = new HashMap<>();
        for (int i = from; i < to; i++) {
            tokens.put(key(prefix + i), token);
        }
        return tokens;
    }

    @Test
    void aSerialUnitRaisingKnownKeysTakesSevenRoundTripsAtReadCommittedAndOneMoreForNewKeys() {
        PostgresWatermarkStore store = PostgresWatermarkStore.create(jdbi);
        String group = "serial-unit";
        store.commit(group, handle -> List.of(new PartitionProgress(P0, -1, 50, tokens("k", 0, 50, 10L))));

        // when a unit raises 20 keys the table holds
        String[] isolation = serialUnit(store, group, 50, tokens("k", 30, 50, 20L));

        // then: the isolation level with the partition lock, its offset read, the lazy load, the handler's
        // statement, the offset's compare-and-set, the watermarks' update, COMMIT
        assertThat(isolation[0]).isEqualTo("read committed");
        assertThat(counter.roundTrips).isEqualTo(7);

        // when a unit raises 10 known keys and adds 10 new ones: their insert is one round trip more
        Map<Bytes, Long> mixed = tokens("k", 40, 60, 30L);
        assertThat(serialUnit(store, group, 51, mixed)[0]).isEqualTo("read committed");
        assertThat(counter.roundTrips).isEqualTo(8);

        Map<Bytes, Long> expected = tokens("k", 0, 30, 10L);
        expected.putAll(tokens("k", 30, 40, 20L));
        expected.putAll(mixed);
        assertThat(store.load(group, P0)).isEqualTo(new PartitionState(52, expected));
    }

    @Test
    void keysTheConsumerKnowsToBeNewGoStraightToTheirInsert() {
        PostgresWatermarkStore store = PostgresWatermarkStore.create(jdbi);
        String group = "new-keys";
        store.commit(group, handle -> List.of(new PartitionProgress(P0, -1, 50, tokens("k", 0, 50, 10L))));

        // when a unit raises 20 keys the table does not hold, without the hint: the update looks for each of them
        serialUnit(store, group, 50, tokens("n", 0, 20, 20L));
        assertThat(counter.roundTrips).isEqualTo(8);

        // when the next unit's progress names its 20 new keys: no update, their insert only
        Map<Bytes, Long> fresh = tokens("n", 20, 40, 20L);
        serialUnit(store, group, 51, fresh, fresh.keySet());
        assertThat(counter.roundTrips).isEqualTo(7);

        // when a unit mixes 10 known keys with 10 hinted new ones: the update for the known ones, then the insert
        Map<Bytes, Long> mixed = tokens("k", 0, 10, 30L);
        Map<Bytes, Long> mixedNew = tokens("m", 0, 10, 30L);
        mixed.putAll(mixedNew);
        serialUnit(store, group, 52, mixed, mixedNew.keySet());
        assertThat(counter.roundTrips).isEqualTo(8);

        Map<Bytes, Long> expected = tokens("k", 10, 50, 10L);
        expected.putAll(tokens("n", 0, 40, 20L));
        expected.putAll(mixed);
        assertThat(store.load(group, P0)).isEqualTo(new PartitionState(53, expected));
    }

    /**
     * A key the consumer took for new has a row after all (another member stored it meanwhile): the insert fails
     * under its savepoint and the upsert keeps the greater token. Under pgjdbc's {@code autosave=always} the
     * driver rolls back to a savepoint of its own, set just before the library's in the same round trip, so that
     * the library's savepoint is gone when it rolls back to it: the unit must go on with the upsert all the same.
     */
    @Test
    void aKeyTakenForNewThatHasARowIsUpsertedAlsoUnderTheDriversAutosave() throws SQLException {
        for (String autosave : List.of("never", "always")) {
            connection.close();
            Properties properties = new Properties();
            properties.setProperty("user", postgres.database.user());
            properties.setProperty("password", postgres.database.password());
            properties.setProperty("autosave", autosave);
            connection = DriverManager.getConnection(postgres.database.jdbcUrl(), properties);
            PostgresWatermarkStore store = PostgresWatermarkStore.create(jdbi);
            String group = "wrong-hint-" + autosave;
            store.commit(group, handle -> List.of(new PartitionProgress(P0, -1, 50, tokens("k", 0, 10, 10L))));

            Map<Bytes, Long> raised = tokens("k", 0, 2, 20L);
            raised.putAll(tokens("n", 0, 2, 20L));
            serialUnit(store, group, 50, raised, raised.keySet());

            Map<Bytes, Long> expected = tokens("k", 2, 10, 10L);
            expected.putAll(raised);
            assertThat(store.load(group, P0)).as("autosave=%s", autosave).isEqualTo(new PartitionState(51, expected));
        }
    }

    @Test
    void aKeyParallelRecordTransactionTakesFourRoundTripsAndRunsAtReadCommitted() {
        PostgresWatermarkStore store = PostgresWatermarkStore.create(jdbi);
        String[] isolation = new String[1];

        counter.reset();
        long verdict = store.recordTransactions()
                .applyOnce(
                        "parallel-record",
                        P0,
                        key("k").get(),
                        7,
                        3,
                        FencePolicy.STRICT,
                        handle -> isolation[0] = handle.createQuery("SELECT current_setting('transaction_isolation')")
                                .mapTo(String.class)
                                .one());

        System.out.printf(
                "key-parallel record: %d round trips, %d statements: %s%n",
                counter.roundTrips, counter.statements, String.join("\n  ", counter.sent));
        assertThat(verdict).isEqualTo(RecordTransactions.APPLIED);
        assertThat(isolation[0]).isEqualTo("read committed");
        // the lock of the key's row with the isolation level, the handler's statement, the key's row, COMMIT
        assertThat(counter.roundTrips).isEqualTo(4);
        assertThat(store.recordTransactions()
                        .applyOnce("parallel-record", P0, key("k").get(), 7, 3, FencePolicy.STRICT, handle -> {}))
                .isEqualTo(RecordTransactions.APPLIED_BEFORE);
    }

    @Test
    void aCommitGroupOverKnownKeysTakesThreeRoundTripsBesidesItsHandlersAndRunsAtReadCommitted() {
        PostgresWatermarkStore store = PostgresWatermarkStore.create(jdbi);
        String group = "commit-group";
        RecordTransactions.GroupWork<Object> nothing = new RecordTransactions.GroupWork<>() {
            @Override
            public void run(Object transaction, int index) {}

            @Override
            public void refused(int index, long stored) {}
        };
        List<RecordTransactions.GroupRecord> first = List.of(
                new RecordTransactions.GroupRecord(P0, key("a").get(), 1, 3),
                new RecordTransactions.GroupRecord(P0, key("b").get(), 2, 3));
        // the keys' rows exist once a first group created them (one round trip more: the placeholders' insert)
        counter.reset();
        assertThat(store.recordTransactions()
                        .applyGroup(group, first, FencePolicy.STRICT, System.nanoTime() + 60_000_000_000L, nothing))
                .containsExactly(RecordTransactions.APPLIED, RecordTransactions.APPLIED);
        assertThat(counter.roundTrips).isEqualTo(4);

        // when a group of four records over the two known keys runs, one handler asking for the isolation level
        String[] isolation = new String[1];
        List<RecordTransactions.GroupRecord> records = List.of(
                new RecordTransactions.GroupRecord(P0, key("a").get(), 3, 4),
                new RecordTransactions.GroupRecord(P0, key("b").get(), 4, 4),
                new RecordTransactions.GroupRecord(P0, key("a").get(), 5, 5),
                new RecordTransactions.GroupRecord(P0, key("b").get(), 6, 5));
        counter.reset();
        long[] outcomes = store.recordTransactions()
                .applyGroup(
                        group,
                        records,
                        FencePolicy.STRICT,
                        System.nanoTime() + 60_000_000_000L,
                        new RecordTransactions.GroupWork<Object>() {
                            @Override
                            public void run(Object transaction, int index) {
                                if (index == 0) {
                                    isolation[0] = ((org.jdbi.v3.core.Handle) transaction)
                                            .createQuery("SELECT current_setting('transaction_isolation')")
                                            .mapTo(String.class)
                                            .one();
                                }
                            }

                            @Override
                            public void refused(int index, long stored) {}
                        });

        System.out.printf(
                "commit group of 4 records: %d round trips, %d statements:%n  %s%n",
                counter.roundTrips, counter.statements, String.join("\n  ", counter.sent));
        assertThat(outcomes).containsOnly(RecordTransactions.APPLIED);
        assertThat(isolation[0]).isEqualTo("read committed");
        // the keys' locks with the isolation level, the one handler's statement, the keys' rows, COMMIT
        assertThat(counter.roundTrips).isEqualTo(4);
    }

    /** Counts the protocol messages pgjdbc logs on one thread. */
    private static final class ProtocolCounter extends Handler {
        private final Thread thread;
        final List<String> sent = new ArrayList<>();
        volatile int roundTrips;
        volatile int statements;

        ProtocolCounter(Thread thread) {
            this.thread = thread;
            setLevel(Level.ALL);
        }

        void reset() {
            roundTrips = 0;
            statements = 0;
            sent.clear();
        }

        @Override
        public void publish(LogRecord record) {
            if (Thread.currentThread() != thread || record.getMessage() == null) {
                return;
            }
            String message = record.getMessage().trim();
            if (message.startsWith("FE=>")) {
                Object[] parameters = record.getParameters();
                sent.add(message
                        + (parameters == null || parameters.length == 0 ? "" : " " + Arrays.asList(parameters)));
            }
            // pgjdbc's BEGIN goes as a SimpleQuery in the same message as the statement after it: no wait of its own
            if (message.equals("FE=> Sync")) {
                roundTrips++;
            } else if (message.startsWith("FE=> Execute")) {
                statements++;
            }
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
    }
}
