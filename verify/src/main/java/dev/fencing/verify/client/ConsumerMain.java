package dev.fencing.verify.client;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.fencing.harness.ChildArguments;
import dev.fencing.harness.PostgresAccess;
import dev.fencing.kafka.FencedConsumer;
import dev.fencing.kafka.PostgresWatermarkStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A member of the consumer group, one JVM each, started (and SIGKILLed, and started again) by the coordinator.
 * It applies each record by appending the record's operation id to its key's applied list ({@code
 * <schema>.applied}). The fenced run uses {@code FencedConsumer} with {@code PostgresWatermarkStore} and a
 * transactional handler, so the append, the watermark and the offset commit together; the control run uses a
 * plain poll loop that appends, with Kafka's automatic offset commits (at least once, no token checked). With
 * {@code concurrency} above 1 the fenced member is the key-parallel consumer ({@code maxConcurrency}), and the
 * control member applies each poll's records on that many threads at once, as a hand-made parallel loop that does
 * not keep a key's records in order would.
 *
 * <p>Events {@code READY}, {@code HEAP <bytes>}, {@code FAILED <message>} (the consumer stopped on an error);
 * commands {@code STOP} (leave the group and exit), {@code HEAP}. Arguments {@code key=value}: member, mode,
 * kafka, topic, group, jdbcUrl, jdbcUser, schema, concurrency; the JDBC password from {@value WriterMain#PASSWORD_ENV}.
 */
public final class ConsumerMain {
    private static final Logger LOG = LoggerFactory.getLogger(ConsumerMain.class);

    private final ChildArguments args;
    private final int member;
    private final int concurrency;
    private final CoordinatorLink link = new CoordinatorLink(System.out);
    private final CountDownLatch stop = new CountDownLatch(1);

    private ConsumerMain(ChildArguments args) {
        this.args = args;
        this.member = args.whole("member");
        this.concurrency = args.whole("concurrency");
    }

    public static void main(String[] argv) {
        ConsumerMain consumer = new ConsumerMain(new ChildArguments(argv));
        consumer.link.listen(consumer::command);
        try {
            consumer.run();
            System.exit(0);
        } catch (RuntimeException e) {
            LOG.error("consumer member {} failed", consumer.member, e);
            consumer.link.emit("FAILED", e.toString());
            System.exit(1);
        }
    }

    private void command(String line) {
        if (line.equals("STOP")) {
            stop.countDown();
        } else if (line.equals("HEAP")) {
            link.emitHeap();
        }
    }

    private void run() {
        String schema = args.text("schema");
        HikariConfig pool =
                PostgresAccess.childPool(args, WriterMain.PASSWORD_ENV, concurrency + 2, "consumer-" + member);
        Map<String, Object> properties = new HashMap<>();
        properties.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args.text("kafka"));
        properties.put(ConsumerConfig.GROUP_ID_CONFIG, args.text("group"));
        properties.put(ConsumerConfig.CLIENT_ID_CONFIG, "verify-consumer-" + member);
        properties.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        // a crashed member's partitions move on after 6 s (the broker's minimum), not Kafka's default 45 s
        properties.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 6_000);
        properties.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 1_000);
        String appendSql = "INSERT INTO " + schema + ".applied (record_key, ids) VALUES (?, ARRAY[CAST(? AS BIGINT)])"
                + " ON CONFLICT (record_key) DO UPDATE SET ids = " + schema + ".applied.ids || EXCLUDED.ids";
        try (HikariDataSource dataSource = new HikariDataSource(pool)) {
            Jdbi jdbi = Jdbi.create(dataSource);
            if (args.text("mode").equals("fenced")) {
                runFenced(jdbi, properties, appendSql);
            } else {
                runPlain(jdbi, properties, appendSql);
            }
        }
    }

    private void runFenced(Jdbi jdbi, Map<String, Object> properties, String appendSql) {
        FencedConsumer<String, String> consumer = FencedConsumer.builder(
                        new StringDeserializer(), new StringDeserializer())
                .properties(properties)
                .topics(args.text("topic"))
                .transactionalHandler(
                        PostgresWatermarkStore.create(jdbi),
                        (Handle handle, ConsumerRecord<String, String> record, long token) ->
                                handle.execute(appendSql, record.key(), Long.parseLong(record.value())))
                .maxConcurrency(concurrency)
                .build();
        CompletableFuture<Void> loop = consumer.start();
        link.emit("READY");
        loop.whenComplete((ignored, failure) -> stop.countDown());
        awaitStop();
        consumer.close();
        if (loop.isCompletedExceptionally()) {
            loop.join(); // throws the loop's failure, reported as FAILED
        }
    }

    private void runPlain(Jdbi jdbi, Map<String, Object> properties, String appendSql) {
        // what a plain consumer does by default: offsets committed in the background every few seconds, so a
        // crash replays what was applied since the last commit (the interval is Kafka's 5 s shortened to 2 s)
        properties.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, true);
        properties.put(ConsumerConfig.AUTO_COMMIT_INTERVAL_MS_CONFIG, 2_000);
        ExecutorService workers = Executors.newFixedThreadPool(concurrency);
        try (KafkaConsumer<String, String> consumer =
                new KafkaConsumer<>(properties, new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(args.text("topic")));
            Thread stopper = new Thread(
                    () -> {
                        awaitStop();
                        consumer.wakeup();
                    },
                    "consumer-stopper");
            stopper.setDaemon(true);
            stopper.start();
            link.emit("READY");
            try {
                while (stop.getCount() > 0) {
                    ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
                    applyPlain(jdbi, appendSql, records, workers);
                }
            } catch (WakeupException e) {
                // STOP: leave the group
            }
        } finally {
            workers.shutdownNow();
        }
    }

    /** Applies a poll's records, on {@code concurrency} threads at once when it is above 1 (in no key's order). */
    private void applyPlain(
            Jdbi jdbi, String appendSql, ConsumerRecords<String, String> records, ExecutorService workers) {
        List<CompletableFuture<Void>> applied = new ArrayList<>();
        for (ConsumerRecord<String, String> record : records) {
            Runnable apply = () ->
                    jdbi.useHandle(handle -> handle.execute(appendSql, record.key(), Long.parseLong(record.value())));
            if (concurrency == 1) {
                apply.run();
            } else {
                applied.add(CompletableFuture.runAsync(apply, workers));
            }
        }
        CompletableFuture.allOf(applied.toArray(CompletableFuture[]::new)).join();
    }

    private void awaitStop() {
        try {
            stop.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
