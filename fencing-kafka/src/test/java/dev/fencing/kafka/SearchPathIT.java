package dev.fencing.kafka;

import static dev.fencing.kafka.KafkaFixture.committed;
import static dev.fencing.kafka.KafkaFixture.consumerConfig;
import static dev.fencing.kafka.KafkaFixture.newGroup;
import static dev.fencing.kafka.KafkaFixture.newTopic;
import static dev.fencing.kafka.KafkaFixture.producer;
import static dev.fencing.kafka.KafkaFixture.sendFenced;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * From an adversarial review, as fencing-jdbc's SearchPathTypeIT: {@link PostgresWatermarkStore}'s statements on
 * a consumer whose sessions run with a search path that puts a schema of their own before pg_catalog ({@code
 * shadow, pg_catalog, public}). A type, function or operator there named as one of pg_catalog's is found first
 * wherever a statement names it without its schema, so the store's statements name every type, function and
 * operator with pg_catalog. Each test saves two keys' watermarks (7 and 3, in one poll:
 * one commit group for a key-parallel consumer) through the shadowed sessions, restarts the consumer, and sends each key
 * a stale record (5 and 2): the restarted consumer refuses both, and the stored rows name the keys' own topic.
 */
class SearchPathIT {
    private static PostgresFixture postgres;

    @BeforeAll
    static void migrate() {
        postgres = new PostgresFixture("kafka_search_path_it");
    }

    @AfterAll
    static void drop() {
        postgres.close();
    }

    /**
     * A type named {@code text} (a domain over {@code varchar(1)}), so that {@code CAST('orders' AS text)} reads
     * 'o' there: a save that cast its topics to {@code text[]} stored the key's watermark under the topic's first
     * letter, which the restarted consumer's load (by the topic's whole name) did not find.
     */
    @Test
    void aSerialConsumerRefusesAStaleRecordAfterARestartOnSessionsWhoseSearchPathShadowsText() {
        Jdbi shadowed = shadowedSessions("CREATE DOMAIN %s.text AS pg_catalog.varchar(1)");
        String cast = shadowed.withHandle(h -> h.createQuery("SELECT CAST('orders' AS text)")
                .mapTo(String.class)
                .one());
        assertThat(cast)
                .as("the consumer's sessions read text as the shadowing domain")
                .isEqualTo("o");

        staleRecordRefusedAfterRestart(shadowed, "search-path-text", false);
    }

    /**
     * An {@code =} for two {@code bytea} that is never true, found before pg_catalog's: a load that compared the
     * keys with it found no watermark for them.
     */
    @Test
    void aSerialConsumerRefusesAStaleRecordAfterARestartOnSessionsWhoseSearchPathShadowsByteaEquality() {
        Jdbi shadowed = shadowedSessions(
                "CREATE FUNCTION %1$s.never_equal(pg_catalog.bytea, pg_catalog.bytea) RETURNS pg_catalog.bool"
                        + " LANGUAGE sql IMMUTABLE AS 'SELECT false'",
                "CREATE OPERATOR %1$s.= (LEFTARG = pg_catalog.bytea, RIGHTARG = pg_catalog.bytea,"
                        + " FUNCTION = %1$s.never_equal)");
        boolean equal =
                shadowed.withHandle(h -> h.createQuery("SELECT '\\x01'::pg_catalog.bytea = '\\x01'::pg_catalog.bytea")
                        .mapTo(Boolean.class)
                        .one());
        assertThat(equal)
                .as("the consumer's sessions compare bytea with the shadowing =")
                .isFalse();

        staleRecordRefusedAfterRestart(shadowed, "search-path-bytea", false);
    }

    /**
     * The text domain again, for a key-parallel consumer's commit groups, whose statements cast topics too: they
     * stored both keys under the topic's first letter (and found them there again: every topic of that first
     * letter would have shared its keys' watermarks).
     */
    @Test
    void commitGroupsStoreTheWholeTopicOnSessionsWhoseSearchPathShadowsText() {
        Jdbi shadowed = shadowedSessions("CREATE DOMAIN %s.text AS pg_catalog.varchar(1)");

        staleRecordRefusedAfterRestart(shadowed, "search-path-group", true);
    }

    /** A Jdbi whose sessions' search path is a new schema (made with {@code ddl}), pg_catalog, public. */
    private static Jdbi shadowedSessions(String... ddl) {
        String schema = "shadow_" + UUID.randomUUID().toString().substring(0, 8);
        postgres.jdbi.useHandle(h -> {
            h.execute("CREATE SCHEMA " + schema);
            for (String statement : ddl) {
                h.execute(String.format(statement, schema));
            }
        });
        String url = postgres.database.jdbcUrl();
        return Jdbi.create(
                url + (url.contains("?") ? "&" : "?") + "currentSchema=" + schema + ",pg_catalog,public",
                postgres.database.user(),
                postgres.database.password());
    }

    private static void staleRecordRefusedAfterRestart(Jdbi shadowed, String prefix, boolean commitGroups) {
        String topic = newTopic(prefix, 1);
        String group = newGroup(prefix);
        List<String> handled = new CopyOnWriteArrayList<>();
        try (KafkaProducer<String, String> producer = producer()) {
            sendFenced(producer, topic, "sku-1", "set 20", 7);
            sendFenced(producer, topic, "sku-2", "set 30", 3);
        }
        run(shadowed, group, topic, commitGroups, handled, 2);

        // when: the paused ex-holders' writes land while the consumer is down, and it restarts
        try (KafkaProducer<String, String> producer = producer()) {
            sendFenced(producer, topic, "sku-1", "set 11", 5);
            sendFenced(producer, topic, "sku-2", "set 21", 2);
        }
        run(shadowed, group, topic, commitGroups, handled, 4);

        // then
        List<String> stored = postgres.jdbi.withHandle(
                h -> h.createQuery("SELECT topic || ':' || convert_from(record_key, 'UTF8') || '@' || fence_token"
                                + " FROM fencing.kafka_watermark WHERE consumer_group = ?")
                        .bind(0, group)
                        .mapTo(String.class)
                        .list());
        assertThat(handled).as("the records handled").containsExactlyInAnyOrder("set 20", "set 30");
        assertThat(stored)
                .as("the stored watermarks")
                .containsExactlyInAnyOrder(topic + ":sku-1@7", topic + ":sku-2@3");
    }

    private static void run(
            Jdbi store, String group, String topic, boolean commitGroups, List<String> handled, long until) {
        FencedConsumerBuilder<String, String> builder = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(consumerConfig(group))
                .topics(topic);
        if (commitGroups) {
            builder.maxConcurrency(2)
                    .groupMaxRecords(100)
                    .groupMaxTime(Duration.ofMinutes(1))
                    .transactionalHandler(
                            PostgresWatermarkStore.create(store),
                            (handle, record, token) -> handled.add(record.value()));
        } else {
            builder.watermarkStore(PostgresWatermarkStore.create(store))
                    .handler((record, token) -> handled.add(record.value()));
        }
        try (FencedConsumer<String, String> consumer = builder.build()) {
            CompletableFuture<Void> stopped = consumer.start();
            await().atMost(Duration.ofSeconds(60)).until(() -> stopped.isDone() || committed(group, topic) == until);
            assertThat(stopped).as("the consumer, still running").isNotDone();
        }
    }
}
