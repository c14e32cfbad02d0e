package dev.fencing.kafka;

import static org.assertj.core.api.Assertions.as;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.InstanceOfAssertFactories.STRING;
import static org.awaitility.Awaitility.await;

import dev.fencing.kafka.internal.WatermarkSave;
import dev.fencing.kafka.spi.PartitionProgress;
import dev.fencing.kafka.spi.PartitionState;
import dev.fencing.kafka.spi.PartitionTakenOverException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Bytes;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class PostgresWatermarkStoreIT {
    private static final TopicPartition P0 = new TopicPartition("orders", 0);
    private static final TopicPartition P1 = new TopicPartition("orders", 1);
    private static PostgresFixture postgres;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_store_it");
    }

    @AfterAll
    static void drop() {
        postgres.close();
    }

    private static Bytes key(String key) {
        return Bytes.wrap(key.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void savesAndLoadsOffsetsAndWatermarksPerGroupAndPartition() {
        PostgresWatermarkStore store = PostgresWatermarkStore.create(postgres.jdbi);
        assertThat(store.load("g1", P0)).isEqualTo(PartitionState.EMPTY);

        store.commit(
                "g1",
                handle -> List.of(
                        new PartitionProgress(P0, -1, 3, Map.of(key("a"), 5L, key("b"), 6L)),
                        new PartitionProgress(P1, -1, 1, Map.of(Bytes.wrap(new byte[] {0, -1, 7}), 2L))));

        assertThat(store.load("g1", P0)).isEqualTo(new PartitionState(3, Map.of(key("a"), 5L, key("b"), 6L)));
        assertThat(store.load("g1", P1).watermarks()).containsEntry(Bytes.wrap(new byte[] {0, -1, 7}), 2L);
        assertThat(store.load("g2", P0)).isEqualTo(PartitionState.EMPTY);
    }

    @Test
    void neverLowersAWatermarkAndRollsBackTheHandlersWritesWithARefusedBatch() {
        PostgresWatermarkStore store = PostgresWatermarkStore.create(postgres.jdbi);
        postgres.jdbi.useHandle(h -> h.execute("CREATE TABLE IF NOT EXISTS effect (note TEXT)"));
        store.commit("g3", handle -> List.of(new PartitionProgress(P0, -1, 1, Map.of(key("a"), 9L))));
        store.commit("g3", handle -> List.of(new PartitionProgress(P0, 1, 2, Map.of(key("a"), 4L))));
        assertThat(store.load("g3", P0).watermarks()).containsEntry(key("a"), 9L);

        // a zombie that loaded offset 1 commits after the owner moved to 2: refused, its write undone
        assertThatThrownBy(() -> store.commit("g3", handle -> {
                    handle.execute("INSERT INTO effect VALUES ('zombie')");
                    return List.of(new PartitionProgress(P0, 1, 5, Map.of(key("a"), 10L)));
                }))
                .isInstanceOf(PartitionTakenOverException.class)
                .hasMessageContaining("expected stored offset 1 but found 2");
        int effects = postgres.jdbi.withHandle(h -> h.createQuery("SELECT count(*) FROM effect")
                .mapTo(Integer.class)
                .one());
        assertThat(effects).isZero();
        assertThat(store.load("g3", P0)).isEqualTo(new PartitionState(2, Map.of(key("a"), 9L)));
    }

    @Test
    void oneCommitRaisesKeysItHoldsAndAddsNewOnes() {
        PostgresWatermarkStore store = PostgresWatermarkStore.create(postgres.jdbi);
        store.commit("g4", handle -> List.of(new PartitionProgress(P0, -1, 1, Map.of(key("a"), 3L, key("b"), 8L))));

        // a raised, b offered lower (kept at 8), c new
        store.commit(
                "g4",
                handle -> List.of(new PartitionProgress(P0, 1, 2, Map.of(key("a"), 7L, key("b"), 5L, key("c"), 1L))));

        assertThat(store.load("g4", P0))
                .isEqualTo(new PartitionState(2, Map.of(key("a"), 7L, key("b"), 8L, key("c"), 1L)));
    }

    @Test
    void keysWronglyHintedAsNewKeepTheHigherStoredTokenAndTheTrulyNewOnesAreStillInserted() {
        PostgresWatermarkStore store = PostgresWatermarkStore.create(postgres.jdbi);
        store.commit("g4h", handle -> List.of(new PartitionProgress(P0, -1, 1, Map.of(key("a"), 9L, key("b"), 3L))));

        // a unit that takes every key it raises for new, a and b wrongly (as after another member wrote them):
        // the store inserts the hinted keys without looking for them first, and finds a and b only when the
        // insert fails
        Map<Bytes, Long> raised = Map.of(key("a"), 5L, key("b"), 7L, key("c"), 4L, key("d"), 6L);
        store.commit("g4h", handle -> List.of(new PartitionProgress(P0, 1, 2, raised, raised.keySet())));

        // a kept at 9 (offered lower), b raised, c and d new; the unit's offset saved too
        assertThat(store.load("g4h", P0))
                .isEqualTo(new PartitionState(2, Map.of(key("a"), 9L, key("b"), 7L, key("c"), 4L, key("d"), 6L)));

        // and the hint right: the insert alone, on one connection more times than pgjdbc's prepareThreshold (5),
        // after which the savepoint and the insert run as server-side prepared statements; then a wrong hint again
        try (Handle single = postgres.jdbi.open()) {
            PostgresWatermarkStore oneConnection = PostgresWatermarkStore.create(Jdbi.create(single.getConnection()));
            for (int unit = 2; unit < 10; unit++) {
                Map<Bytes, Long> fresh = Map.of(key("e" + unit), 2L, key("f" + unit), 3L);
                long expected = unit;
                oneConnection.commit(
                        "g4h",
                        handle -> List.of(new PartitionProgress(P0, expected, expected + 1, fresh, fresh.keySet())));
                assertThat(store.load("g4h", P0).watermarks())
                        .containsEntry(key("e" + unit), 2L)
                        .containsEntry(key("f" + unit), 3L);
            }
            Map<Bytes, Long> again = Map.of(key("a"), 11L, key("g"), 1L);
            oneConnection.commit("g4h", handle -> List.of(new PartitionProgress(P0, 10, 11, again, again.keySet())));
            assertThat(store.load("g4h", P0).nextOffset()).isEqualTo(11);
            assertThat(store.load("g4h", P0).watermarks())
                    .containsEntry(key("a"), 11L)
                    .containsEntry(key("g"), 1L);
        }
    }

    @Test
    void firstCommitsOfSeveralPartitionsSucceedWhenTheDriverRewritesBatchedInserts() {
        // reWriteBatchedInserts turns a batch of INSERTs into one multi-row INSERT whose per-row counts are
        // unknown (Statement.SUCCESS_NO_INFO); a commit must not read that as another member's write
        Properties properties = new Properties();
        properties.setProperty("user", postgres.database.user());
        properties.setProperty("password", postgres.database.password());
        properties.setProperty("reWriteBatchedInserts", "true");
        PostgresWatermarkStore store =
                PostgresWatermarkStore.create(Jdbi.create(postgres.database.jdbcUrl(), properties));

        store.commit(
                "g7",
                handle -> List.of(
                        new PartitionProgress(P0, -1, 3, Map.of(key("a"), 5L)),
                        new PartitionProgress(P1, -1, 4, Map.of(key("b"), 6L))));

        assertThat(store.load("g7", P0)).isEqualTo(new PartitionState(3, Map.of(key("a"), 5L)));
        assertThat(store.load("g7", P1)).isEqualTo(new PartitionState(4, Map.of(key("b"), 6L)));
        // and a partition another member inserted meanwhile is still refused
        assertThatThrownBy(() -> store.commit(
                        "g7",
                        handle -> List.of(
                                new PartitionProgress(new TopicPartition("orders", 2), -1, 1, Map.of()),
                                new PartitionProgress(P0, -1, 9, Map.of()))))
                .isInstanceOf(PartitionTakenOverException.class)
                .hasMessageContaining("orders-0: expected stored offset -1 but found 3");
        assertThat(store.loadOffset("g7", new TopicPartition("orders", 2))).isEqualTo(-1);
    }

    @Test
    void twoUnitsLockingInOppositeOrdersLoseADeadlockAsABusyPartitionNotAsAStoreFailure() throws Exception {
        // a unit spanning polls can lock out of order; PostgreSQL then breaks the cycle by failing one lock
        PostgresWatermarkStore store = PostgresWatermarkStore.create(postgres.jdbi);
        CyclicBarrier bothHoldOne = new CyclicBarrier(2);
        CompletableFuture<Throwable> first = lockBoth(store, "g8", P0, P1, bothHoldOne);
        CompletableFuture<Throwable> second = lockBoth(store, "g8", P1, P0, bothHoldOne);

        List<Throwable> outcomes = Arrays.asList(first.get(60, TimeUnit.SECONDS), second.get(60, TimeUnit.SECONDS));

        // then: one unit committed, the other is refused as stale (rolled back and read again), not stopped
        assertThat(outcomes).filteredOn(t -> t == null).hasSize(1);
        assertThat(outcomes)
                .filteredOn(t -> t != null)
                .singleElement()
                .isInstanceOf(PartitionTakenOverException.class)
                .extracting(Throwable::getMessage, as(STRING))
                .contains("another unit of work holds its lock");
    }

    @Test
    void aPartitionLockThatTimesOutOnTheLockOfAnotherUnitIsRefusedAsStaleSoTheUnitIsReadAgain() throws Exception {
        // given: a unit that holds P0's lock, and connections that wait at most 200 ms for a lock
        PostgresWatermarkStore holder = PostgresWatermarkStore.create(postgres.jdbi);
        PostgresWatermarkStore impatient = PostgresWatermarkStore.create(jdbiWith("-c lock_timeout=200", "5"));
        CountDownLatch release = new CountDownLatch(1);
        CompletableFuture<Void> holding = holdingThePartitionLock(holder, "g9", P0, release);

        // when / then: the other unit's lock gives up and is refused as stale, not as a store failure
        try {
            assertThatThrownBy(() -> impatient.commit("g9", handle -> {
                        impatient.lockPartition(handle, "g9", P0, -1);
                        return List.of();
                    }))
                    .isInstanceOf(PartitionTakenOverException.class)
                    .hasMessageContaining("another unit of work holds its lock");
        } finally {
            release.countDown();
        }
        holding.get(60, TimeUnit.SECONDS);
    }

    /**
     * A member frozen inside its unit keeps its transaction, and the lock, for as long as it is frozen. On
     * connections without a lock_timeout the next owner's lock must still give up after the store's lock
     * timeout (and be read again), or that member stops polling and is expelled in turn, and the next one after
     * it, until the frozen one resumes.
     */
    @Test
    void aPartitionLockWaitsForAFrozenUnitAtMostThePartitionLockTimeoutOnConnectionsWithoutALockTimeout()
            throws Exception {
        PostgresWatermarkStore frozen = PostgresWatermarkStore.create(postgres.jdbi);
        PostgresWatermarkStore next = PostgresWatermarkStore.create(postgres.jdbi, Duration.ofMillis(300));
        CountDownLatch release = new CountDownLatch(1);
        CompletableFuture<Void> holding = holdingThePartitionLock(frozen, "g10", P0, release);
        try {
            CompletableFuture<Void> waiting = CompletableFuture.runAsync(() -> next.commit("g10", handle -> {
                next.lockPartition(handle, "g10", P0, -1);
                return List.of();
            }));
            assertThatThrownBy(() -> waiting.get(20, TimeUnit.SECONDS))
                    .as("the lock of the partition the frozen unit holds")
                    .isInstanceOf(ExecutionException.class)
                    .cause()
                    .isInstanceOf(PartitionTakenOverException.class)
                    .hasMessageContaining("another unit of work holds its lock");
        } finally {
            release.countDown();
        }
        holding.get(60, TimeUnit.SECONDS);
    }

    @Test
    void aPartitionLockGrantedAfterAWaitLeavesTheHandlersStatementsUnderTheConnectionsOwnLockTimeout()
            throws Exception {
        PostgresWatermarkStore first = PostgresWatermarkStore.create(postgres.jdbi);
        PostgresWatermarkStore second = PostgresWatermarkStore.create(postgres.jdbi, Duration.ofSeconds(30));
        CountDownLatch release = new CountDownLatch(1);
        CompletableFuture<Void> holding = holdingThePartitionLock(first, "g11", P1, release);
        CompletableFuture.runAsync(release::countDown, CompletableFuture.delayedExecutor(500, TimeUnit.MILLISECONDS));

        String[] seenByTheHandler = new String[1];
        second.commit("g11", handle -> {
            second.lockPartition(handle, "g11", P1, -1);
            seenByTheHandler[0] =
                    handle.createQuery("SHOW lock_timeout").mapTo(String.class).one();
            return List.of();
        });

        holding.get(60, TimeUnit.SECONDS);
        assertThat(seenByTheHandler[0]).isEqualTo("0");
    }

    @Test
    void aPartitionLockTimeoutOutsideItsRangeIsRefusedNamingIt() {
        assertThatThrownBy(() -> PostgresWatermarkStore.create(postgres.jdbi, Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("lockTimeout must be from 1 ms to 24 hours, got PT0S");
    }

    /** A unit on its own thread that holds {@code partition}'s lock until {@code release} opens; returns once it does. */
    private static CompletableFuture<Void> holdingThePartitionLock(
            PostgresWatermarkStore store, String group, TopicPartition partition, CountDownLatch release)
            throws InterruptedException {
        CountDownLatch locked = new CountDownLatch(1);
        CompletableFuture<Void> holding = CompletableFuture.runAsync(() -> store.commit(group, handle -> {
            store.lockPartition(handle, group, partition, -1);
            locked.countDown();
            awaitLatch(release);
            return List.of();
        }));
        assertThat(locked.await(60, TimeUnit.SECONDS)).isTrue();
        return holding;
    }

    /** A unit on its own thread that locks {@code a}, waits until the other unit holds its first, then {@code b}. */
    private static CompletableFuture<Throwable> lockBoth(
            PostgresWatermarkStore store, String group, TopicPartition a, TopicPartition b, CyclicBarrier bothHoldOne) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                store.commit(group, handle -> {
                    store.lockPartition(handle, group, a, -1);
                    awaitBarrier(bothHoldOne);
                    store.lockPartition(handle, group, b, -1);
                    return List.of();
                });
                return null;
            } catch (RuntimeException e) {
                return e;
            }
        });
    }

    private static void awaitBarrier(CyclicBarrier barrier) {
        try {
            barrier.await(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        } catch (BrokenBarrierException | TimeoutException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void awaitLatch(CountDownLatch latch) {
        try {
            if (!latch.await(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("never released");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** A Jdbi on the same database whose connections start with the given PostgreSQL settings. */
    private static Jdbi jdbiWith(String options, String prepareThreshold) {
        Properties properties = new Properties();
        properties.setProperty("user", postgres.database.user());
        properties.setProperty("password", postgres.database.password());
        properties.setProperty("options", options);
        properties.setProperty("prepareThreshold", prepareThreshold);
        return Jdbi.create(postgres.database.jdbcUrl(), properties);
    }

    private static Map<Bytes, Long> tokens(String prefix, int count, long token) {
        Map<Bytes, Long> tokens = new HashMap<>();
        for (int i = 0; i < count; i++) {
            tokens.put(key(prefix + i), token);
        }
        return tokens;
    }

    @Test
    void aSaveNeverLowersAStoredTokenUnderAGenericPlanWhereTheSameUpsertWithoutItsGuardDoes() throws SQLException {
        // every execution server-prepared and planned generically, as a long-running consumer's are
        Jdbi generic = jdbiWith("-c plan_cache_mode=force_generic_plan", "1");
        PostgresWatermarkStore store = PostgresWatermarkStore.create(generic);
        store.commit(
                "g5",
                handle -> List.of(
                        new PartitionProgress(P0, -1, 1, tokens("k", 300, 100L)),
                        new PartitionProgress(P1, -1, 1, tokens("k", 300, 100L))));

        // given a unit that offers P0's keys lower and equal tokens next to new keys, and raises P1's keys
        Map<Bytes, Long> offered = new HashMap<>();
        for (int i = 0; i < 300; i++) {
            offered.put(key("k" + i), i % 3 == 0 ? 100L : 1L + i % 99);
        }
        offered.putAll(tokens("new", 50, 7L));
        List<PartitionProgress> unit = List.of(
                new PartitionProgress(P0, 1, 2, offered), new PartitionProgress(P1, 1, 2, tokens("k", 300, 150L)));

        // when
        for (int round = 0; round < 6; round++) {
            long offset = 1 + round;
            store.commit("g5", handle -> unit.stream()
                    .map(p -> new PartitionProgress(p.partition(), offset, offset + 1, p.raisedWatermarks()))
                    .toList());
        }

        // then
        Map<Bytes, Long> expectedP0 = tokens("k", 300, 100L);
        expectedP0.putAll(tokens("new", 50, 7L));
        assertThat(store.load("g5", P0)).isEqualTo(new PartitionState(7, expectedP0));
        assertThat(store.load("g5", P1)).isEqualTo(new PartitionState(7, tokens("k", 300, 150L)));

        // the same statement without its guard lowers the stored tokens: the guard is what keeps them
        String unguarded = WatermarkSave.RAISE_WATERMARKS.substring(
                0, WatermarkSave.RAISE_WATERMARKS.indexOf(" WHERE fencing.kafka_watermark.fence_token"));
        generic.useHandle(handle -> {
            Connection connection = handle.getConnection();
            try (PreparedStatement statement = connection.prepareStatement(unguarded)) {
                statement.setString(1, "g5");
                statement.setArray(2, connection.createArrayOf("text", new String[] {"orders"}));
                statement.setArray(3, connection.createArrayOf("int4", new Integer[] {0}));
                statement.setArray(4, connection.createArrayOf("bytea", new byte[][] {
                    key("k1").get()
                }));
                statement.setArray(5, connection.createArrayOf("int8", new Long[] {2L}));
                assertThat(statement.executeUpdate()).isEqualTo(1);
            }
        });
        assertThat(store.load("g5", P0).watermarks()).containsEntry(key("k1"), 2L);
    }

    /** The shape of the statement this store used before: an UPDATE joined with the input keys. */
    private static final String JOINING_UPSERT = "WITH input AS (SELECT k, t FROM unnest($2::bytea[], $3::bigint[])"
            + " AS u(k, t)) UPDATE fencing.kafka_watermark AS w"
            + " SET fence_token = GREATEST(w.fence_token, input.t) FROM input"
            + " WHERE w.consumer_group = $1 AND w.topic = 'orders' AND w.kafka_partition = 0"
            + " AND w.record_key = input.k";

    private static List<String> genericPlan(String statement, String parameterTypes, String arguments) {
        return postgres.jdbi.withHandle(handle -> {
            handle.execute("SET plan_cache_mode = force_generic_plan");
            handle.execute("PREPARE probe(" + parameterTypes + ") AS " + statement);
            try {
                return handle.createQuery("EXPLAIN EXECUTE probe(" + arguments + ")")
                        .mapTo(String.class)
                        .list();
            } finally {
                handle.execute("DEALLOCATE probe");
            }
        });
    }

    @Test
    void theWatermarkStatementsGenericPlanProbesThePrimaryKeyPerRowAndJoinsNothing() {
        // given the statement with PostgreSQL's numbered parameters in place of JDBC's
        StringBuilder numbered = new StringBuilder();
        int parameter = 0;
        for (char c : WatermarkSave.RAISE_WATERMARKS.toCharArray()) {
            numbered.append(c == '?' ? "$" + ++parameter : String.valueOf(c));
        }
        assertThat(parameter).isEqualTo(5);

        // when
        List<String> plan = genericPlan(
                numbered.toString(), "text, text[], int4[], bytea[], int8[]", "'g', '{}', '{}', '{}', '{}'");

        // then: an insert fed by the unnested arrays, conflicts resolved by the primary key
        assertThat(String.join("\n", plan))
                .contains("Conflict Resolution: UPDATE", "Function Scan")
                .doesNotContain("Join", "Nested Loop");
        // the check tells the two shapes apart: the old statement's plan joins
        assertThat(String.join("\n", genericPlan(JOINING_UPSERT, "text, bytea[], bigint[]", "'g', '{}', '{}'")))
                .containsAnyOf("Join", "Nested Loop");
    }

    @Test
    void runsEachUnitAtReadCommittedWhenTheConnectionsDefaultToSerializable() {
        Jdbi serializable = jdbiWith("-c default_transaction_isolation=serializable", "5");
        PostgresWatermarkStore store = PostgresWatermarkStore.create(serializable);
        String[] seen = new String[1];

        store.commit("g6", handle -> {
            seen[0] = handle.createQuery("SHOW transaction_isolation")
                    .mapTo(String.class)
                    .one();
            return List.of(new PartitionProgress(P0, -1, 1, Map.of()));
        });

        assertThat(seen[0]).isEqualTo("read committed");
        // a plain transaction on the same connections runs at their default
        String plain = serializable.inTransaction(handle -> handle.createQuery("SHOW transaction_isolation")
                .mapTo(String.class)
                .one());
        assertThat(plain).isEqualTo("serializable");
        assertThat(store.loadOffset("g6", P0)).isEqualTo(1);
    }

    private static long tableCounter(String column) {
        return postgres.jdbi.withHandle(handle -> handle.createQuery("SELECT " + column
                        + " FROM pg_stat_user_tables WHERE schemaname = 'fencing' AND relname = 'kafka_watermark'")
                .mapTo(Long.class)
                .one());
    }

    @Test
    void aSaveUpdatesTheKeysTheTableHoldsInPlaceAndInsertsOnlyTheNewOnes() {
        // given 300 stored keys, and the table's counters once the statistics have them
        PostgresWatermarkStore store = PostgresWatermarkStore.create(postgres.jdbi);
        store.commit("g12", handle -> List.of(new PartitionProgress(P0, -1, 1, tokens("k", 300, 10L))));
        long[] before = new long[3];
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
            before[0] = tableCounter("n_tup_ins");
            before[1] = tableCounter("n_tup_upd");
            before[2] = tableCounter("n_tup_hot_upd");
            assertThat(store.load("g12", P0).watermarks()).hasSize(300);
            assertThat(before[0]).isGreaterThanOrEqualTo(300);
        });

        // when a unit raises them all and adds 50 new keys
        Map<Bytes, Long> raised = tokens("k", 300, 20L);
        raised.putAll(tokens("new", 50, 20L));
        store.commit("g12", handle -> List.of(new PartitionProgress(P0, 1, 2, raised)));

        // then: 300 updates, every one HOT (the key's row stays on its page, the primary key is not touched),
        // and 50 inserts
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
            assertThat(tableCounter("n_tup_upd") - before[1]).isEqualTo(300);
            assertThat(tableCounter("n_tup_hot_upd") - before[2]).isEqualTo(300);
            assertThat(tableCounter("n_tup_ins") - before[0]).isEqualTo(50);
        });
        assertThat(store.load("g12", P0)).isEqualTo(new PartitionState(2, raised));
    }

    @Test
    void theKnownKeysUpdateNeverLowersATokenWhereTheSameUpdateWithoutItsGuardDoes() throws SQLException {
        PostgresWatermarkStore store = PostgresWatermarkStore.create(postgres.jdbi);
        store.commit("g13", handle -> List.of(new PartitionProgress(P0, -1, 1, tokens("k", 10, 100L))));

        // a unit offering lower tokens for known keys leaves them
        store.commit("g13", handle -> List.of(new PartitionProgress(P0, 1, 2, tokens("k", 10, 5L))));
        assertThat(store.load("g13", P0).watermarks()).isEqualTo(tokens("k", 10, 100L));

        // the same update without its guard lowers them: the guard is what keeps them
        String guard = " AND w.fence_token OPERATOR(pg_catalog.<) s.fence_token";
        assertThat(WatermarkSave.UPDATE_KNOWN).contains(guard);
        String unguarded = WatermarkSave.UPDATE_KNOWN.replace(guard, "");
        int lowered = postgres.jdbi.withHandle(handle -> {
            Connection connection = handle.getConnection();
            try (PreparedStatement statement = connection.prepareStatement(unguarded)) {
                statement.setString(1, "g13");
                statement.setArray(2, connection.createArrayOf("text", new String[] {"orders"}));
                statement.setArray(3, connection.createArrayOf("int4", new Integer[] {0}));
                statement.setArray(4, connection.createArrayOf("bytea", new byte[][] {
                    key("k1").get()
                }));
                statement.setArray(5, connection.createArrayOf("int8", new Long[] {5L}));
                int rows = 0;
                try (var result = statement.executeQuery()) {
                    while (result.next()) {
                        rows++;
                    }
                }
                return rows;
            }
        });
        assertThat(lowered).isEqualTo(1);
        assertThat(store.load("g13", P0).watermarks()).containsEntry(key("k1"), 5L);
    }

    /** The plan of the known keys' update under the store's settings, for 2,000 keys, as {@code mode} plans it. */
    private static String knownKeysPlan(String mode) {
        StringBuilder numbered = new StringBuilder();
        int parameter = 0;
        for (char c : WatermarkSave.UPDATE_KNOWN.toCharArray()) {
            numbered.append(c == '?' ? "$" + ++parameter : String.valueOf(c));
        }
        StringBuilder keyLiterals = new StringBuilder();
        for (int i = 0; i < 2000; i++) {
            keyLiterals.append(i == 0 ? "" : ",").append("'\\x");
            for (byte b : key("k" + i).get()) {
                keyLiterals.append(String.format("%02x", b));
            }
            keyLiterals.append("'");
        }
        String arrays = "'g14', array_fill('orders'::text, ARRAY[2000]), array_fill(0, ARRAY[2000]),"
                + " ARRAY[" + keyLiterals + "]::bytea[],"
                + " array_fill(7::int8, ARRAY[2000])";
        return postgres.jdbi.inTransaction(handle -> {
            handle.execute("SET LOCAL plan_cache_mode = " + mode);
            handle.createQuery(WatermarkSave.PROBE_JOINS_ONLY).mapToMap().one();
            handle.execute("PREPARE probe(text, text[], int4[], bytea[], int8[]) AS " + numbered);
            try {
                return String.join(
                        "\n",
                        handle.createQuery("EXPLAIN EXECUTE probe(" + arrays + ")")
                                .mapTo(String.class)
                                .list());
            } finally {
                handle.execute("DEALLOCATE probe");
            }
        });
    }

    @Test
    void theKnownKeysUpdateProbesThePrimaryKeyOncePerKeyInCustomAndGenericPlans() {
        // given a group of 20,000 keys, analyzed: its own costs would have PostgreSQL hash all of them
        PostgresWatermarkStore store = PostgresWatermarkStore.create(postgres.jdbi);
        store.commit("g14", handle -> List.of(new PartitionProgress(P0, -1, 1, tokens("k", 20_000, 5L))));
        postgres.jdbi.useHandle(handle -> handle.execute("ANALYZE fencing.kafka_watermark"));

        for (String mode : List.of("force_custom_plan", "force_generic_plan")) {
            assertThat(knownKeysPlan(mode))
                    .as(mode)
                    .contains("Nested Loop", "Tid Scan on kafka_watermark", "Index Scan using kafka_watermark_pkey")
                    .doesNotContain("Hash", "Merge", "Materialize", "Seq Scan", "Bitmap");
        }
    }

    @Test
    void aWrongNewKeyHintNeverLowersAStoredWatermark() {
        // given a key stored at token 10
        PostgresWatermarkStore store = PostgresWatermarkStore.create(postgres.jdbi);
        store.commit("g16", handle -> List.of(new PartitionProgress(P0, -1, 1, Map.of(key("a"), 10L))));

        // when a unit offers it token 5 and names it new (another member wrote it since this one read it)
        store.commit("g16", handle -> List.of(new PartitionProgress(P0, 1, 2, Map.of(key("a"), 5L), Set.of(key("a")))));
        // then the stored watermark stays at 10
        assertThat(store.load("g16", P0)).isEqualTo(new PartitionState(2, Map.of(key("a"), 10L)));

        // and a higher token named new still raises it
        store.commit(
                "g16", handle -> List.of(new PartitionProgress(P0, 2, 3, Map.of(key("a"), 12L), Set.of(key("a")))));
        assertThat(store.load("g16", P0)).isEqualTo(new PartitionState(3, Map.of(key("a"), 12L)));
    }

    @Test
    void theSavesSettingsTurnJitCompilationOffForTheRestOfTheSavesTransactionOnly() {
        // given a session that allows JIT compilation, as a packaged server's default does
        List<String> jit = postgres.jdbi.withHandle(handle -> {
            handle.execute("SET jit = on");
            String inSave = handle.inTransaction(tx -> {
                tx.createQuery(WatermarkSave.PROBE_JOINS_ONLY).mapToMap().one();
                return tx.createQuery("SELECT current_setting('jit')")
                        .mapTo(String.class)
                        .one();
            });
            String after = handle.createQuery("SELECT current_setting('jit')")
                    .mapTo(String.class)
                    .one();
            return List.of(inSave, after);
        });

        // then the save's statements are never compiled, and the connection's own setting is back after it
        assertThat(jit).containsExactly("off", "on");
    }

    @Test
    void theKnownKeysUpdateIsNeverPreparedOnTheServerSoEachUnitIsPlannedWithItsOwnKeys() {
        // given connections that prepare every statement on the server from its first use
        Jdbi preparing = jdbiWith("", "1");
        PostgresWatermarkStore store = PostgresWatermarkStore.create(preparing);
        store.commit("g15", handle -> List.of(new PartitionProgress(P0, -1, 1, tokens("k", 100, 5L))));

        // when ten units run on one connection (a handle held open around them: Jdbi hands the units its connection)
        List<String> prepared = preparing.withHandle(handle -> {
            for (int unit = 1; unit <= 10; unit++) {
                long offset = unit;
                long token = 5 + unit;
                store.commit(
                        "g15", h -> List.of(new PartitionProgress(P0, offset, offset + 1, tokens("k", 100, token))));
            }
            return handle.createQuery("SELECT statement FROM pg_prepared_statements")
                    .mapTo(String.class)
                    .list();
        });

        // then the offset's statement went to the server as a prepared one, the known keys' update never did
        assertThat(prepared).anyMatch(sql -> sql.contains("UPDATE fencing.kafka_offset"));
        assertThat(prepared).noneMatch(sql -> sql.contains("UPDATE fencing.kafka_watermark"));
        assertThat(store.load("g15", P0)).isEqualTo(new PartitionState(11, tokens("k", 100, 15L)));
    }

    @Test
    void recordsTheFirstTopicIdPerGroupAndTopicAndWithoutV104RecordsNothingUntilItIsApplied() throws Exception {
        try (PostgresFixture db = new PostgresFixture("kafka_topic_ids_it")) {
            // given: a database without V104's table (migrated by an earlier version)
            db.jdbi.useHandle(h -> h.execute("DROP TABLE fencing.kafka_topic"));
            PostgresWatermarkStore store = PostgresWatermarkStore.create(db.jdbi);
            Uuid first = Uuid.randomUuid();
            Uuid recreated = Uuid.randomUuid();
            assertThat(store.recordTopicId("g", "orders", first)).isEmpty();

            // when: V104 is applied while the store is in use
            String v104;
            try (var in = getClass().getResourceAsStream("/dev/fencing/db/migration/V104__kafka_topic_id.sql")) {
                v104 = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            }
            db.jdbi.useHandle(h -> h.getConnection().createStatement().execute(v104));

            // then: the first id offered is recorded and returned from then on, per group and topic
            assertThat(store.recordTopicId("g", "orders", first)).contains(first);
            assertThat(store.recordTopicId("g", "orders", recreated)).contains(first);
            assertThat(store.recordTopicId("other", "orders", recreated)).contains(recreated);
            assertThat(store.recordTopicId("g", "payments", recreated)).contains(recreated);
        }
    }

    @Test
    void aTopicIdRecordedInsideAUnitThatIsRolledBackStaysRecordedSoARecreatedTopicIsStillCaught() {
        // given: a unit of work during which the consumer takes a partition of a topic the group has no id for
        // (its rebalance callback runs inside the unit's poll, on the unit's thread: Jdbi hands the store's
        // statements the unit's transaction), and which is then rolled back, as a unit spanning a rebalance is
        PostgresWatermarkStore store = PostgresWatermarkStore.create(postgres.jdbi);
        String group = "rolled-back-" + Uuid.randomUuid();
        Uuid taken = Uuid.randomUuid();
        Uuid recreated = Uuid.randomUuid();
        assertThatThrownBy(() -> store.commit(group, handle -> {
                    assertThat(store.recordTopicId(group, "orders", taken)).contains(taken);
                    throw new IllegalStateException("rebalance during a unit of work");
                }))
                .hasMessage("rebalance during a unit of work");

        // when: the topic is deleted and created again under the name (another id) before its next assignment
        // then: the id taken is still the group's, and the new topic's is refused, not recorded in its place
        assertThat(store.recordTopicId(group, "orders", recreated)).contains(taken);
    }

    @Test
    void aTopicIdAnotherMemberRecordsMeanwhileIsReturnedOnceItCommits() throws Exception {
        // given: another member's insert of the group's id for the topic, not yet committed
        PostgresWatermarkStore store = PostgresWatermarkStore.create(postgres.jdbi);
        Uuid theirs = Uuid.randomUuid();
        Uuid ours = Uuid.randomUuid();
        String group = "racing-" + Uuid.randomUuid();
        try (Handle other = postgres.jdbi.open()) {
            other.begin();
            other.execute(
                    "INSERT INTO fencing.kafka_topic (consumer_group, topic, topic_id) VALUES (?, 'orders', ?::uuid)",
                    group,
                    new java.util.UUID(theirs.getMostSignificantBits(), theirs.getLeastSignificantBits()).toString());

            // when: this member records its id, waits on that insert, and the other commits
            CompletableFuture<java.util.Optional<Uuid>> recorded =
                    CompletableFuture.supplyAsync(() -> store.recordTopicId(group, "orders", ours));
            await().atMost(Duration.ofSeconds(30))
                    .until(() -> postgres.jdbi.withHandle(h -> h.createQuery("SELECT count(*) FROM pg_stat_activity"
                                            + " WHERE wait_event_type = 'Lock' AND query LIKE '%fencing.kafka_topic%'")
                                    .mapTo(Integer.class)
                                    .one())
                            == 1);
            other.commit();

            // then: the statement that waited saw neither its own insert nor the other's row; asked again, the
            // store returns the other member's id, not a failure
            assertThat(recorded.get(30, TimeUnit.SECONDS)).contains(theirs);
        }
    }
}
