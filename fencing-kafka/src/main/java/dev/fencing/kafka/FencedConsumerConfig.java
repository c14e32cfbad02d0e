package dev.fencing.kafka;

/**
 * Keys a user may put among the Kafka consumer properties given to {@link FencedConsumerBuilder#properties}.
 * All start with {@code fencing.}; every other key goes to the {@code KafkaConsumer} unchanged. Their
 * strings are API, like Kafka's {@code ConsumerConfig}.
 *
 * <pre>{@code
 * Map<String, Object> config = Map.of(
 *         ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
 *         ConsumerConfig.GROUP_ID_CONFIG, "billing-applier",
 *         FencedConsumerConfig.POLICY_CONFIG, "strict",
 *         FencedConsumerConfig.DEAD_LETTER_TOPIC_CONFIG, "billing.refused");
 * }</pre>
 */
public final class FencedConsumerConfig {
    public static final String DEAD_LETTER_TOPIC_CONFIG = "fencing.dead.letter.topic";
    public static final String DEAD_LETTER_TOPIC_DOC = "Topic that receives refused records (missing or unreadable"
            + " token, no key, undeserializable, and stale ones unless fencing.stale.records=drop). Empty: the"
            + " source topic's name followed by '.dlt'. The topic must exist when the consumer starts.";
    public static final String DEFAULT_DEAD_LETTER_TOPIC = "";

    public static final String STALE_RECORDS_CONFIG = "fencing.stale.records";
    public static final String STALE_RECORDS_DOC = "What to do with a record older than its key's watermark:"
            + " 'dead-letter' sends it to the dead-letter topic, 'drop' only counts and logs it (DEBUG).";
    public static final String DEFAULT_STALE_RECORDS = StaleRecordPolicy.DEAD_LETTER.configValue();

    public static final String POLICY_CONFIG = "fencing.policy";
    public static final String POLICY_DOC = "How a record's token must compare with its key's watermark (fencing-core's"
            + " FencePolicy): 'monotonic' accepts an equal token, so a holder may publish several records under one"
            + " grant; 'strict' refuses it, so each token applies at most one record per key. Older tokens are"
            + " refused either way.";
    public static final String DEFAULT_POLICY = "monotonic";

    public static final String POLL_TIMEOUT_MS_CONFIG = "fencing.poll.timeout.ms";
    public static final String POLL_TIMEOUT_MS_DOC = "Longest time one poll waits for records, in milliseconds.";
    public static final long DEFAULT_POLL_TIMEOUT_MS = 500;

    public static final String CLOSE_TIMEOUT_MS_CONFIG = "fencing.close.timeout.ms";
    public static final String CLOSE_TIMEOUT_MS_DOC =
            "How long close() waits for the poll loop to finish its" + " batch and leave the group, in milliseconds.";
    public static final long DEFAULT_CLOSE_TIMEOUT_MS = 30_000;

    public static final String DEAD_LETTER_TIMEOUT_MS_CONFIG = "fencing.dead.letter.timeout.ms";
    public static final String DEAD_LETTER_TIMEOUT_MS_DOC = "Longest time one dead-letter write may take from its"
            + " send (including waiting for metadata) to its acknowledgement, in milliseconds. When it passes, or at"
            + " the first write that fails, the consumer stops with a DeadLetterException naming the topic and the"
            + " record's offset, and commits nothing past it. Keep it well below max.poll.interval.ms.";
    public static final long DEFAULT_DEAD_LETTER_TIMEOUT_MS = 10_000;

    public static final String WATERMARK_CACHE_MAX_KEYS_CONFIG = "fencing.watermark.cache.max.keys";
    public static final String WATERMARK_CACHE_MAX_KEYS_DOC = "Most watermarks the consumer holds in its heap for"
            + " one owned partition (about 90 bytes each for 10-byte keys). When a unit of work ends with more, the"
            + " partition's watermarks are dropped from the heap: with a store they are loaded again, key by key, as"
            + " their records come back; with heapOnlyWatermarksLostOnRestart() they are lost, and the next record of"
            + " each dropped key is accepted whatever its token.";
    public static final int DEFAULT_WATERMARK_CACHE_MAX_KEYS = 1_000_000;

    public static final String COMMIT_MAX_RECORDS_CONFIG = "fencing.commit.max.records";
    public static final String COMMIT_MAX_RECORDS_DOC = "Serial consumer: a unit of work (one store"
            + " transaction and save, one offset commit) ends after the poll that brings it to this many records"
            + " (so it may hold up to max.poll.records - 1 more), over several polls. 0: no limit by count, the"
            + " unit ends by fencing.commit.interval.ms. Larger units amortize the store's commit and write each"
            + " key's watermark once per unit; a rebalance during a unit rolls it back and reads it again (with a"
            + " plain handler, its effects then happen twice).";
    public static final long DEFAULT_COMMIT_MAX_RECORDS = 0;

    public static final String COMMIT_INTERVAL_MS_CONFIG = "fencing.commit.interval.ms";
    public static final String COMMIT_INTERVAL_MS_DOC = "Serial consumer: how long one unit of work (one store"
            + " transaction and save, one offset commit) stays open, polling as it goes, in milliseconds (checked"
            + " between polls: the unit ends after the poll that outlives it). A unit also ends at"
            + " fencing.commit.max.records records, at a poll that brings nothing for 20 ms, and on close. 0:"
            + " commit after every poll. A unit's dead letters are awaited once, before its save: no offset, in the"
            + " store or in Kafka, passes a dead letter that was not acknowledged. A crash or a rebalance replays up"
            + " to one unit (a plain handler's effects then happen again; a transactional handler's unit is rolled"
            + " back whole). Keep it well below max.poll.interval.ms. In key-parallel mode (fencing.max.concurrency"
            + " above 1): how often each partition's offset is committed up to its lowest unfinished record.";
    public static final long DEFAULT_COMMIT_INTERVAL_MS = 1_000;

    public static final String MAX_CONCURRENCY_CONFIG = "fencing.max.concurrency";
    public static final String MAX_CONCURRENCY_DOC = "Records handled at the same time, from 1 to 4096. 1: the serial"
            + " consumer, every record on the poll thread in offset order. Above 1: the key-parallel consumer, records"
            + " of one key one at a time in offset order, records of different keys at once on this many worker"
            + " threads; offsets are committed per partition up to the lowest record not yet finished. With a"
            + " transactionalHandler it needs PostgresWatermarkStore (records commit with their keys' applied"
            + " offsets, in commit groups) and a connection pool of at least this many connections;"
            + " fencing.commit.max.records must stay 0. Above 1,"
            + " the handler and the key and value deserializers are called from this many threads at once: they"
            + " must be thread-safe.";
    public static final int DEFAULT_MAX_CONCURRENCY = 1;

    public static final String MAX_IN_FLIGHT_PER_PARTITION_CONFIG = "fencing.max.in.flight.per.partition";
    public static final String MAX_IN_FLIGHT_PER_PARTITION_DOC = "Key-parallel consumer only: records one partition"
            + " may hold past its committable offset (queued, running, or finished above a record not yet"
            + " finished), from 1 to 1000000. A partition that holds this many is paused (the consumer keeps"
            + " polling, so it stays in the group) and resumed at half. The heap holds at most this many records"
            + " per partition plus one poll's, whatever the number of keys. Progress is also saved as soon as a"
            + " partition's committable offset runs this many records ahead of the saved one, so a crash replays"
            + " at most about twice this many plus two polls' records per partition.";
    public static final int DEFAULT_MAX_IN_FLIGHT_PER_PARTITION = 1_000;

    public static final String GROUP_MAX_RECORDS_CONFIG = "fencing.group.max.records";
    public static final String GROUP_MAX_RECORDS_DOC = "Key-parallel consumer with a transactionalHandler only:"
            + " records one commit group may hold, from 1 to 10000. A worker takes up to this many records from"
            + " the keys waiting (a key's records in order), runs them in one transaction that locks each key"
            + " once and writes the keys' tokens and applied offsets in one statement, and only after it commits"
            + " counts them finished. About 1 + 4/n statements per record instead of 5; the group's keys stay"
            + " locked, and its records uncommitted, until it commits. A conflict (deadlock, serialization"
            + " failure, a key written by another member) or a handler failure rolls the group back and runs its"
            + " records again one transaction each. 1: a transaction per record.";
    public static final int DEFAULT_GROUP_MAX_RECORDS = 16;

    public static final String GROUP_MAX_MS_CONFIG = "fencing.group.max.ms";
    public static final String GROUP_MAX_MS_DOC = "Key-parallel consumer with a transactionalHandler only: longest"
            + " time a commit group starts records, in milliseconds; a record whose turn comes later waits for the"
            + " next group. Bounds how long a group holds its keys' locks and its records back from the committed"
            + " offset when handlers are slow; keep it below fencing.commit.interval.ms and well below the close"
            + " timeout.";
    public static final long DEFAULT_GROUP_MAX_MS = 500;

    public static final String RETRY_BACKOFF_MS_CONFIG = "fencing.retry.backoff.ms";
    public static final String RETRY_BACKOFF_MS_DOC = "First wait, in milliseconds, before a unit (serial), record"
            + " or commit group (key-parallel) that a transient failure rolled back is run again from the same"
            + " records; doubled after each failure up to fencing.retry.backoff.max.ms. Transient: the store's"
            + " database lost or refused the connection (SQLSTATE class 08 but 08004, 57P01, 57P02, 57P03, 53300, a pool"
            + " that found no connection in time), or rolled the transaction back as a deadlock (40P01) or a"
            + " serialization failure (40001); inside a transactional handler too. A handler's own failure is"
            + " retried only if FencedConsumerBuilder.retryHandlerFailures names it.";
    public static final long DEFAULT_RETRY_BACKOFF_MS = 100;

    public static final String RETRY_BACKOFF_MAX_MS_CONFIG = "fencing.retry.backoff.max.ms";
    public static final String RETRY_BACKOFF_MAX_MS_DOC = "Longest wait between two attempts of a unit, record or"
            + " group after transient failures, in milliseconds (the back-off doubles up to it).";
    public static final long DEFAULT_RETRY_BACKOFF_MAX_MS = 10_000;

    public static final String RETRY_MAX_MS_CONFIG = "fencing.retry.max.ms";
    public static final String RETRY_MAX_MS_DOC = "How long, in milliseconds from its first failure, the consumer"
            + " keeps running again a unit, record or group that transient failures roll back; then it stops"
            + " with the last failure, as it does at once for any other failure. 0: nothing is retried. While it"
            + " waits to take its partitions again (the serial consumer after any transient failure, the"
            + " key-parallel one after one of its poll thread) the consumer does not poll: keep it below"
            + " max.poll.interval.ms, or the group expels the member meanwhile (it rejoins and reads its"
            + " partitions again from the store).";
    public static final long DEFAULT_RETRY_MAX_MS = 120_000;

    /**
     * Prefix for settings of the producer that writes dead letters, for example {@code
     * fencing.dead.letter.producer.compression.type=lz4}. It gets {@code bootstrap.servers} and the security
     * settings of the consumer, {@code acks=all} and idempotence; these override them, except that {@code
     * acks} other than {@code all} and {@code enable.idempotence=false} are refused (a dead letter must not
     * be lost), and so are {@code max.block.ms} (set from {@value #DEAD_LETTER_TIMEOUT_MS_CONFIG}) and {@code
     * transactional.id}.
     */
    public static final String DEAD_LETTER_PRODUCER_PREFIX = "fencing.dead.letter.producer.";

    /** Suffix of the default dead-letter topic. */
    public static final String DEAD_LETTER_SUFFIX = ".dlt";

    static final String PREFIX = "fencing.";

    private FencedConsumerConfig() {}
}
