package dev.fencing.kafka.internal;

import dev.fencing.FencePolicy;
import dev.fencing.kafka.DeadLetterReason;
import dev.fencing.kafka.FenceTokenHeader;
import dev.fencing.kafka.RecordHandlingException;
import dev.fencing.kafka.StaleRecordPolicy;
import dev.fencing.kafka.TransactionalRecordHandler;
import java.nio.ByteBuffer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.Deserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The step every record takes, whichever scheduler runs it (the serial {@link UnitOfWork} or the key-parallel
 * {@link KeyParallelWorker}): the fence decision against its key's watermark ({@link FenceDecision}); a refused
 * record dropped (stale, under {@link StaleRecordPolicy#DROP}) or dead-lettered with a detail a person can act
 * on; an accepted one deserialized and handed to the handler, or dead-lettered if a deserializer refuses it.
 *
 * <p>What stays with the scheduler: where the key's watermark is read and raised (the step returns the token
 * to raise it to), whether a dead letter is awaited at once or later ({@link DeadLetterSink}), and what a
 * handler failure does to the rest of its records. Thread-safe if the handler, the deserializers and the sink
 * are.
 */
public final class RecordStep<K, V> {
    private static final Logger LOG = LoggerFactory.getLogger(RecordStep.class);
    private static final TokenHeaderReader TOKENS = TokenHeaderReader.get();

    /** What {@link #apply} returns for a refused record: nothing to raise. */
    public static final long REFUSED = 0;

    /** How a refused record reaches its dead-letter topic. */
    @FunctionalInterface
    public interface DeadLetterSink {
        /** @throws dev.fencing.kafka.DeadLetterException if the write failed or is late */
        void deadLetter(ConsumerRecord<ByteBuffer, ByteBuffer> record, DeadLetterReason reason, String detail);
    }

    /** Where a partition's outcomes are counted (for the meters). */
    public interface Tally {
        void accepted();

        void dropped();

        void deadLettered(DeadLetterReason reason);
    }

    /** A deserialized record, or (record null) why a deserializer refused it. */
    public record Typed<K, V>(ConsumerRecord<K, V> record, String failure) {}

    private final String groupId;
    private final TransactionalRecordHandler<Object, K, V> handler;
    private final Deserializer<K> keyDeserializer;
    private final Deserializer<V> valueDeserializer;
    private final FencePolicy policy;
    private final StaleRecordPolicy stalePolicy;
    private final DeadLetterSink deadLetters;

    public RecordStep(
            ConsumerSettings settings,
            TransactionalRecordHandler<Object, K, V> handler,
            Deserializer<K> keyDeserializer,
            Deserializer<V> valueDeserializer,
            DeadLetterSink deadLetters) {
        this.groupId = settings.groupId();
        this.handler = handler;
        this.keyDeserializer = keyDeserializer;
        this.valueDeserializer = valueDeserializer;
        this.policy = settings.policy();
        this.stalePolicy = settings.staleRecords();
        this.deadLetters = deadLetters;
    }

    /** The comparison the fence makes. */
    public FencePolicy policy() {
        return policy;
    }

    /**
     * The token the record carries in its last {@value FenceTokenHeader#NAME} header, or {@link
     * FenceDecision#MISSING_TOKEN} or {@link FenceDecision#UNREADABLE_TOKEN}; never 0.
     */
    public static long carried(ConsumerRecord<ByteBuffer, ByteBuffer> record) {
        return TOKENS.read(record.headers());
    }

    /** The record's last {@value FenceTokenHeader#NAME} header, or null. */
    public static Header tokenHeader(ConsumerRecord<ByteBuffer, ByteBuffer> record) {
        return record.headers().lastHeader(FenceTokenHeader.NAME);
    }

    /**
     * Decides the record against its key's watermark and carries the decision out: refused, it is dropped or
     * dead-lettered; accepted, it is deserialized and handled in {@code tx} (null for a plain handler).
     *
     * @param watermark the key's watermark, 0 if none (or if the record has no key)
     * @return the token the key's watermark must be raised to: the record's, once it was handled, or once it
     *     passed the fence but could not be deserialized (its holder exists, so a record under an older token
     *     is stale whether or not this one could be read); {@link #REFUSED} if it was refused
     * @throws RecordHandlingException if the handler failed (nothing to raise; the record is not finished)
     * @throws dev.fencing.kafka.DeadLetterException if the sink failed
     */
    public long apply(Object tx, ConsumerRecord<ByteBuffer, ByteBuffer> record, long watermark, Tally tally) {
        return apply(tx, record, carried(record), watermark, tally);
    }

    /**
     * {@link #apply(Object, ConsumerRecord, long, Tally)} for a token already read from the record ({@link
     * #carried}): a record run again is decided by the token it was fetched with, whatever a handler did to its
     * headers meanwhile.
     */
    public long apply(
            Object tx, ConsumerRecord<ByteBuffer, ByteBuffer> record, long carried, long watermark, Tally tally) {
        long token = FenceDecision.decide(record.key() != null, carried, watermark, policy);
        if (!FenceDecision.accepted(token)) {
            refuse(record, token, tokenHeader(record), watermark, tally);
            return REFUSED;
        }
        Typed<K, V> typed = deserialize(record);
        if (typed.record() == null) {
            deadLetters.deadLetter(record, DeadLetterReason.UNREADABLE_RECORD, typed.failure());
            tally.deadLettered(DeadLetterReason.UNREADABLE_RECORD);
            return token;
        }
        handle(tx, typed.record(), token);
        tally.accepted();
        return token;
    }

    /**
     * A record skipped because its key's applied offset reaches it: it was applied (or refused) before, by a
     * key-parallel record transaction. Nothing to count: it was counted when it was first dealt with.
     */
    public void appliedBefore(ConsumerRecord<ByteBuffer, ByteBuffer> record) {
        LOG.debug(
                "group {}: {}-{}@{} was applied before (its key's applied offset is at or past it); skipped",
                groupId,
                record.topic(),
                record.partition(),
                record.offset());
    }

    /**
     * The slow path: drops a refused record or dead-letters it, with a detail a person can act on.
     *
     * @param verdict what {@link FenceDecision#decide} said
     * @param watermark the watermark the record was judged against
     */
    public void refuse(
            ConsumerRecord<ByteBuffer, ByteBuffer> record, long verdict, Header header, long watermark, Tally tally) {
        DeadLetterReason reason = FenceDecision.reason(verdict);
        String detail = FenceDecision.detail(verdict, header, watermark, FetchedBytes.copy(record.key()));
        if (reason == DeadLetterReason.STALE_TOKEN && stalePolicy == StaleRecordPolicy.DROP) {
            tally.dropped();
            LOG.debug(
                    "group {} dropped {}-{}@{}: {}",
                    groupId,
                    record.topic(),
                    record.partition(),
                    record.offset(),
                    detail);
            return;
        }
        deadLetters.deadLetter(record, reason, detail);
        tally.deadLettered(reason);
    }

    /** Writes a dead letter through the sink, uncounted. */
    public void deadLetter(ConsumerRecord<ByteBuffer, ByteBuffer> record, DeadLetterReason reason, String detail) {
        deadLetters.deadLetter(record, reason, detail);
    }

    /**
     * Runs the handler.
     *
     * @throws RecordHandlingException wrapping whatever it threw, checked ones too (from a handler that throws
     *     them sneakily)
     */
    public void handle(Object tx, ConsumerRecord<K, V> typed, long token) {
        try {
            handler.handle(tx, typed, token);
        } catch (Throwable e) {
            throw new RecordHandlingException(
                    new TopicPartition(typed.topic(), typed.partition()), typed.offset(), token, e);
        }
    }

    /**
     * The typed record, or why a deserializer refused it. The deserializers read views of the fetched buffers,
     * made for this call: whatever a deserializer, or a handler given a view, does to a view's position and limit
     * (Kafka lets both read a buffer to its end), the fetched buffers stay as fetched, for the record's next
     * deserialization (a key-parallel retry, a commit group rerun record by record) and its dead letter. Likewise
     * the headers: the deserializers and the typed record get a list of their own (Kafka's headers are mutable;
     * copied only once something may change it, {@link CopyOnWriteHeaders}), so that a header a deserializer or
     * handler adds or removes is neither in the record's dead letter nor seen by its next deserialization.
     */
    public Typed<K, V> deserialize(ConsumerRecord<ByteBuffer, ByteBuffer> record) {
        ByteBuffer key = record.key() == null ? null : record.key().duplicate();
        ByteBuffer value = record.value() == null ? null : record.value().duplicate();
        Headers headers = new CopyOnWriteHeaders(record.headers());
        try {
            return new Typed<>(
                    new ConsumerRecord<>(
                            record.topic(),
                            record.partition(),
                            record.offset(),
                            record.timestamp(),
                            record.timestampType(),
                            record.serializedKeySize(),
                            record.serializedValueSize(),
                            keyDeserializer.deserialize(record.topic(), headers, key),
                            valueDeserializer.deserialize(record.topic(), headers, value),
                            headers,
                            record.leaderEpoch()),
                    null);
        } catch (Exception e) { // checked ones too, from a deserializer that throws them sneakily
            return new Typed<>(null, "deserializer failed: " + e);
        }
    }
}
