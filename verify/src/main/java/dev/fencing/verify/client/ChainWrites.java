package dev.fencing.verify.client;

import com.zaxxer.hikari.HikariDataSource;
import dev.fencing.FencePolicy;
import dev.fencing.harness.ChildArguments;
import dev.fencing.harness.ChildProducer;
import dev.fencing.harness.PointGate;
import dev.fencing.kafka.FencedRecords;
import dev.fencing.lock.Lease;
import dev.fencing.testsupport.PostgresBackends;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;
import org.jdbi.v3.core.Jdbi;

/**
 * The postgres resource's writes, the whole chain: append the operation's id to the resource's row (fencing-jdbc
 * on one of four paths, or a plain UPDATE in the control run), then publish a record keyed by the resource,
 * stamped with the token and carrying the id. Not thread-safe: one writer thread.
 */
final class ChainWrites implements WriterWorkload<ChainWrites.Plan> {
    /**
     * One operation's choices.
     *
     * @param path how the append is written
     * @param stamped whether its record carries the token header
     */
    record Plan(WritePath path, boolean stamped) {}

    private final boolean fenced;
    private final String schema;
    private final String topic;
    private final int unstampedEvery;
    private final HistoryWriter history;
    private final CoordinatorLink link;
    private final PointGate<PausePoint> gate;
    private final HikariDataSource dataSource;
    private final KafkaProducer<String, String> producer;
    private ResourceWriter writer;

    /**
     * Arguments: {@code jdbcUrl}, {@code jdbcUser}, {@code schema}, {@code kafka}, {@code topic}, {@code
     * unstampedEvery}; the JDBC password from {@value WriterMain#PASSWORD_ENV}.
     */
    ChainWrites(
            ChildArguments args,
            int client,
            boolean fenced,
            HistoryWriter history,
            CoordinatorLink link,
            PointGate<PausePoint> gate) {
        this.fenced = fenced;
        this.schema = args.text("schema");
        this.topic = args.text("topic");
        this.unstampedEvery = args.whole("unstampedEvery");
        this.history = history;
        this.link = link;
        this.gate = gate;

        Map<String, Object> producerConfig = ChildProducer.config(args.text("kafka"), "verify-writer-" + client);
        this.dataSource = ResourceWriter.pool(args, client);
        try {
            this.producer = new KafkaProducer<>(producerConfig, new StringSerializer(), new StringSerializer());
        } catch (RuntimeException e) {
            dataSource.close();
            throw e;
        }
    }

    @Override
    public void connect() {
        Jdbi jdbi = Jdbi.create(dataSource);
        // STRICT: each grant writes the row once
        writer = fenced ? ResourceWriter.fenced(jdbi, schema, FencePolicy.STRICT) : ResourceWriter.plain(jdbi, schema);
        producer.partitionsFor(topic); // connect before START, so the first operation is not slow
    }

    @Override
    public Plan plan(Random random) {
        WritePath path = fenced ? WritePath.fenced(random) : WritePath.PLAIN;
        boolean stamped = unstampedEvery <= 0 || random.nextInt(unstampedEvery) != 0;
        return new Plan(path, stamped);
    }

    @Override
    public void operate(Lease lease, String resource, long op, Plan plan) {
        WritePath path = plan.path();
        boolean stamped = plan.stamped();
        long token = lease.token();
        history.invokeAppend(op, resource, token, path.label());
        link.emit("LOCKED", resource, token);
        gate.pass(PausePoint.LOCK_WRITE, () -> link.emit("POINT", PausePoint.LOCK_WRITE, resource, token, 0));
        WriteResult result = writer.append(
                path,
                resource,
                op,
                token,
                handle -> gate.pass(
                        PausePoint.IN_TRANSACTION,
                        () -> link.emit(
                                "POINT",
                                PausePoint.IN_TRANSACTION,
                                resource,
                                token,
                                PostgresBackends.backendPid(handle.getConnection()))));
        switch (result.kind()) {
            case APPLIED -> {
                history.okAppend(op, resource, token);
                link.emit("WRITTEN", resource, token);
            }
            case REFUSED -> {
                history.failAppend(op, resource, token, result.detail());
                link.emit("REFUSED", resource, token);
                return;
            }
            case INDETERMINATE -> {
                history.infoAppend(op, resource, token, result.detail());
                link.emit("UNKNOWN", resource, token);
                return;
            }
        }
        gate.pass(PausePoint.WRITE_PUBLISH, () -> link.emit("POINT", PausePoint.WRITE_PUBLISH, resource, token, 0));
        history.invokePublish(op, resource, token, stamped);
        ProducerRecord<String, String> record = stamped
                ? FencedRecords.create(topic, resource, Long.toString(op), token)
                : new ProducerRecord<>(topic, resource, Long.toString(op));
        try {
            RecordMetadata published = producer.send(record).get(30, TimeUnit.SECONDS);
            history.okPublish(op, resource, token, published.partition(), published.offset());
            link.emit("PUBLISHED", resource, token);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            history.infoPublish(op, resource, token, "interrupted");
        } catch (Exception e) { // ExecutionException, TimeoutException, KafkaException
            history.infoPublish(
                    op, resource, token, WriteResult.indeterminate(e).detail());
        }
    }

    @Override
    public void close() {
        try {
            producer.close();
        } finally {
            dataSource.close();
        }
    }
}
