package dev.fencing.kafka;

import dev.fencing.FencePolicy;
import dev.fencing.kafka.internal.AppliedOffsetStore;
import dev.fencing.kafka.internal.ConsumerEngine;
import dev.fencing.kafka.internal.ConsumerMeters;
import dev.fencing.kafka.internal.ConsumerSettings;
import dev.fencing.kafka.internal.RecordTransactions;
import dev.fencing.kafka.spi.WatermarkStore;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Deserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Kafka poll loop that hands a record to your handler only if its fence token is not older than the
 * newest token already accepted for its key, and never loses the ones it refuses.
 *
 * <p>The fencing contract, for a resource guarded by a lock whose grants carry increasing tokens:
 *
 * <pre>
 *   holder A (token 7)  --- publishes "set 10" --- GC pause ......................... publishes "set 11" (late!)
 *   holder B (token 8)                              acquires --- publishes "set 20"
 *   consumer                "set 10" (7) applied     "set 20" (8) applied; watermark 8   "set 11" (7): 7 &lt; 8, refused
 * </pre>
 *
 * Records of one resource share a key, so they sit in one partition and arrive in the order written; the
 * consumer keeps per key the highest accepted token (its watermark) and refuses any record below it.
 *
 * <pre>{@code
 * // the consumer runs until close(): keep it for the life of the service, not in a try-with-resources
 * FencedConsumer<String, String> consumer = FencedConsumer.builder(
 *                 new StringDeserializer(), new StringDeserializer())
 *         .properties(Map.of(
 *                 ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
 *                 ConsumerConfig.GROUP_ID_CONFIG, "inventory-applier",
 *                 ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest"))
 *         .topics("inventory") // "inventory" and "inventory.dlt" must exist
 *         .transactionalHandler(
 *                 PostgresWatermarkStore.create(jdbi),
 *                 (handle, record, token) ->
 *                         handle.execute("UPDATE stock SET reserved = reserved + 1 WHERE sku = ?", record.key()))
 *         .build();
 * CompletableFuture<Void> stopped = consumer.start(); // or consumer.run() on a thread of yours
 * // on shutdown: consumer.close();
 * }</pre>
 *
 * <p>What it guarantees:
 *
 * <ul>
 *   <li>Order: one poll thread handles records one at a time, in offset order per partition, so in order
 *       per key (key-parallel mode, below: in order per key only). Equal tokens are accepted ({@link FencePolicy#MONOTONIC}, the default), so a holder may
 *       publish several records under one grant; {@link FencePolicy#STRICT} ({@value
 *       FencedConsumerConfig#POLICY_CONFIG}{@code =strict}) refuses them.
 *   <li>Nothing silently discarded: a record without a key, without a {@value FenceTokenHeader#NAME} header,
 *       with an unreadable one, or that the deserializers refuse, goes to the dead-letter topic, with the
 *       {@link DeadLetterHeaders} saying why and where it came from. Stale records go there too, unless
 *       {@value FencedConsumerConfig#STALE_RECORDS_CONFIG}{@code =drop}, which counts and logs them.
 *   <li>Offsets: committed manually, only up to records whose handling finished (dead-lettered and dropped
 *       records count as finished once the dead-letter write is acknowledged). {@code enable.auto.commit}
 *       is refused.
 *   <li>Watermarks: kept in a {@link WatermarkStore}, which the builder requires: {@link
 *       PostgresWatermarkStore} (durable, shared by the group), {@link InMemoryWatermarkStore} (one JVM), or the
 *       explicit opt-in {@link FencedConsumerBuilder#heapOnlyWatermarksLostOnRestart()}, which loses them on every
 *       restart and locks nothing (an expelled member is not fenced).
 *       With {@link PostgresWatermarkStore} and a {@link TransactionalRecordHandler} each unit (handler
 *       effects, watermarks, offsets) is one transaction: a crash and restart neither applies a record twice
 *       nor accepts a stale one. Each unit first locks its partitions in the store (see {@link
 *       WatermarkStore#lockPartition}), so a member expelled from the group waits or fails before its handler runs on
 *       records of a partition another member committed. On assignment the consumer stops with {@link
 *       StoreBehindKafkaException} if the group's committed offset in Kafka is ahead of the store's, with
 *       {@link TopicRecreatedException} if the store holds the topic's progress under another Kafka topic id
 *       (a topic deleted and created again under the same name; see {@link WatermarkStore#recordTopicId}; the id
 *       is compared again before each save of progress, as a topic created again while the consumer did not
 *       fetch it brings no new assignment), and
 *       with {@link LogBehindStoreException} if Kafka returns a partition's records from below the store's
 *       offset (a topic deleted and created again, a truncated log) rather than judge them by another log's
 *       state.
 *   <li>Memory: the consumer holds watermarks only for the partitions it owns and drops them when a
 *       partition is revoked or lost. A lazily loading store ({@link WatermarkStore#loadsLazily()}, the
 *       PostgreSQL one) costs one offset read at assignment, and each key's watermark is loaded, in one query
 *       per partition and poll, when its records arrive. A unit of work that ends holding more than {@value
 *       FencedConsumerConfig#WATERMARK_CACHE_MAX_KEYS_CONFIG} watermarks for a partition (about 90 bytes each
 *       for 10-byte keys) drops all of them from the heap; with a store they are loaded again as their keys
 *       come back (heap-only: forgotten). The {@link InMemoryWatermarkStore} itself keeps every key
 *       it was given.
 *   <li>Units of work: the consumer commits on an interval. A unit (one store commit, one offset commit)
 *       spans polls until it is {@value FencedConsumerConfig#COMMIT_INTERVAL_MS_CONFIG} old (1 s by default),
 *       holds {@value FencedConsumerConfig#COMMIT_MAX_RECORDS_CONFIG} records (no limit by default), a poll
 *       brings nothing for 20 ms, or the consumer closes; {@code fencing.commit.interval.ms=0} commits after every poll.
 *       Longer units amortize the store's commit (each key's watermark is written once per unit) and the wait
 *       for dead-letter acknowledgements, which happens once per unit, before its save: no offset, in the store
 *       or in Kafka, passes a dead letter that was not acknowledged, and the store gets each offset with
 *       exactly the watermarks raised below it. A crash, or a rebalance during a unit, replays up to one unit
 *       (rolled back whole with a transactional handler; handled again with a plain one).
 * </ul>
 *
 * <p><b>Key-parallel mode</b> ({@link FencedConsumerBuilder#maxConcurrency maxConcurrency(n)}, n &gt; 1): for
 * handlers that wait on I/O. The poll thread hands each record to a lane of its key; a fixed pool of n worker
 * threads runs the lanes, so records of one key are handled one at a time in offset order and records of
 * different keys at the same time. What changes, and what does not:
 *
 * <pre>{@code
 * FencedConsumer<String, String> consumer = FencedConsumer.builder(
 *                 new StringDeserializer(), new StringDeserializer())
 *         .properties(config)
 *         .topics("sku-events")
 *         .maxConcurrency(64) // records of 64 keys at once; a pool of at least 64 + 2 connections behind jdbi
 *         .transactionalHandler(
 *                 PostgresWatermarkStore.create(jdbi),
 *                 (handle, record, token) -> handle.execute(
 *                         "UPDATE stock SET reserved = reserved + 1 WHERE sku = ?", record.key()))
 *         .build();
 * }</pre>
 *
 * <ul>
 *   <li>The fence is the serial consumer's, per key: the same {@link FencePolicy}, the same dead-letter rules
 *       and reasons. A key's watermark is raised only once its record's handler returned; a refused record's
 *       dead letter is acknowledged before the key's next record starts.
 *   <li>Offsets: per partition, committed (to the store, then Kafka) every {@value
 *       FencedConsumerConfig#COMMIT_INTERVAL_MS_CONFIG} up to the lowest record not finished, never past it,
 *       however many later records of other keys finished.
 *   <li>With {@link PostgresWatermarkStore} and a transactional handler, records commit in groups of up to
 *       {@value FencedConsumerConfig#GROUP_MAX_RECORDS_CONFIG} ({@link FencedConsumerBuilder#groupMaxRecords};
 *       1: a transaction per record): a worker's group locks each of its keys' watermark rows once, decides its
 *       records against the stored tokens, runs the handler for each, and stores the raised tokens together
 *       with each key's last applied offset (migration {@code V101}) in the same transaction; its records count
 *       as finished only once it committed. A conflict (deadlock, serialization failure) or a handler failure
 *       rolls the group back and runs its records again, one transaction each. After a crash the consumer
 *       reads again from the stored partition offset, and a record at or below its key's applied offset is
 *       skipped inside the locked transaction that would apply it: no record is applied twice or skipped, and
 *       no stale record is accepted (the argument is in the implementation's comments). Give the store a
 *       pooled {@code DataSource} with at least n + 2 connections. Other transactional stores are refused at
 *       build: they cannot commit per key.
 *   <li>With a plain handler, delivery is at least once as in the serial consumer: the store gets a
 *       partition's offset together with exactly the watermarks raised below it, so a crash replays (at most)
 *       the records held past the committed offset, each decided as it was the first time. Partitions are
 *       locked when their offsets are committed, not before each record: a member expelled from the group may
 *       run the records it holds while the new owner runs them too.
 *   <li>Back-pressure: a partition holding {@value FencedConsumerConfig#MAX_IN_FLIGHT_PER_PARTITION_CONFIG}
 *       records past its committed offset (queued, running, or finished above an unfinished one) is paused
 *       and resumed at half; the loop keeps polling, so the member stays in the group. Memory: lanes and
 *       offsets hold only those records, whatever the number of keys; watermarks (plain handlers) at most
 *       {@value FencedConsumerConfig#WATERMARK_CACHE_MAX_KEYS_CONFIG} per partition plus those in flight (a
 *       partition over it is paused until idle and its watermarks dropped, to be loaded again from the
 *       store); the transactional mode keeps none in the heap.
 *   <li>Rebalance: a revoked partition's records in flight are waited for (at most {@value
 *       FencedConsumerConfig#CLOSE_TIMEOUT_MS_CONFIG}), then nothing more of it starts, those running are
 *       waited for as long again, what finished is committed and its state dropped; when the callback returns
 *       nothing of the partition runs. A handler still running then stops the consumer ({@link
 *       HandlersStillRunningException}). Lost partitions are not committed.
 *   <li>Failure: a handler failure in one key stops the consumer: no further record starts, those running
 *       finish, and offsets are committed up to the failed record (or below it), never past it; {@link #run()}
 *       throws the {@link RecordHandlingException}. A transient failure (below) of one record's transaction or
 *       group is retried by its worker: the record keeps its key's lane and holds the committed offset below
 *       it while it waits, and runs again in a new transaction.
 * </ul>
 *
 * <p>Not a {@code ConsumerInterceptor}: Kafka logs and swallows an interceptor's exception and passes the
 * records on, which would fail open.
 *
 * <p>Deserialization: the consumer fetches with Kafka's {@code ByteBufferDeserializer}, so the fence check reads
 * each key where the fetch put it, and the handler's deserializers get the same bytes through their {@code
 * ByteBuffer} method; deserializers that read a {@code byte[]} get a copy, as with a plain {@code
 * KafkaConsumer}. A deserializer that returns the buffer itself (a {@code ByteBufferDeserializer} of your own)
 * hands the handler a slice of the fetch response: copy what you keep, or the whole response stays in memory.
 * Each deserialization gets views of its own of the fetched buffers, so a deserializer or handler may read them
 * to their end: a record run again in key-parallel mode (a retry, a commit group rerun record by record) is
 * deserialized from its whole key and value again, and a dead letter carries them whole. The bytes themselves
 * are shared: a handler that writes into them in place sees its own writes when its record is run again. The
 * headers are a list of each deserialization's own: a header a deserializer or handler adds or removes is not
 * seen when the record is run again (which is decided by the token it was fetched with), nor carried by its
 * dead letter, which holds the record's headers as fetched; the bytes of a header's value are shared, as the
 * key's and value's are.
 *
 * <p><b>Transient failures are retried</b>, in both modes, for up to {@value
 * FencedConsumerConfig#RETRY_MAX_MS_CONFIG} (2 minutes by default) from the first failure, waiting {@value
 * FencedConsumerConfig#RETRY_BACKOFF_MS_CONFIG} (100 ms) doubled per attempt up to {@value
 * FencedConsumerConfig#RETRY_BACKOFF_MAX_MS_CONFIG} (10 s): the store's database refused or lost the
 * connection (SQLSTATE class {@code 08} but {@code 08004}, {@code 57P01}, {@code 57P02}, {@code 57P03}, {@code 53300}, a pool
 * that found no connection in time) or rolled a transaction back as a deadlock ({@code 40P01}) or a
 * serialization failure ({@code 40001}), also when a transactional handler's own statement met it. The failed
 * unit (serial) or record or group (key-parallel) is rolled back and run again from the same records; the serial
 * consumer first drops its partitions' watermarks from memory and takes them again from the store, so a
 * watermark that the failed attempt raised cannot refuse the retry; nothing is skipped, nothing is applied twice
 * (with a transactional handler), and no offset is committed past a record that was not applied. Meanwhile
 * {@link #state()} is {@link ConsumerState#RETRYING}. A handler's own exception is retried only if {@link
 * FencedConsumerBuilder#retryHandlerFailures} names it. A consumer with {@link
 * FencedConsumerBuilder#heapOnlyWatermarksLostOnRestart()} in key-parallel mode retries only in its workers.
 *
 * <p>Failure: a handler exception or {@code Error} (the unit is rolled back either way), a dead-letter write
 * that fails or exceeds {@value FencedConsumerConfig#DEAD_LETTER_TIMEOUT_MS_CONFIG}, a store that cannot
 * load or save, a missing topic or dead-letter topic at start (still missing after 3 s, for a topic made just
 * before that its broker's metadata does not show yet), a store behind Kafka, or a log behind the store stops
 * the loop; {@link #run()} throws it ({@link RecordHandlingException}, {@link DeadLetterException}, {@link
 * WatermarkStoreException}, {@link MissingTopicException}, {@link StoreBehindKafkaException}, {@link
 * TopicRecreatedException}, {@link LogBehindStoreException}) and {@link
 * #start()}'s future completes with it; {@link #state()} is then {@link ConsumerState#FAILED} and {@link
 * #restart()} starts it again from what was committed. Records are read {@code read_committed} only. With the in-memory store
 * or a plain handler, delivery is at least once: a crash between the handler and the offset commit replays
 * records, and a replayed record with the watermark's token is accepted again.
 *
 * <p>Dead letters are written at least once: a batch that is rolled back after its dead-letter writes
 * writes them again when it is read again.
 *
 * <p>Metrics, with a {@link FencedConsumerBuilder#meterRegistry} (none by default; Micrometer): counters {@code
 * fencing.kafka.records.accepted}, {@code fencing.kafka.records.dropped} (stale, count-and-drop policy) and {@code
 * fencing.kafka.records.dead.lettered} (tags {@code group}, {@code topic}, and {@code reason} for dead letters);
 * gauge {@code fencing.kafka.watermarks.held} (tags {@code group}, {@code client}).
 *
 * <p>Thread-safety: {@link #run()} or {@link #start()} once (and {@link #restart()} after each failure);
 * {@link #close()}, {@link #state()} and {@link #heldWatermarks()} from any thread. {@code close()} is safe to
 * call twice.
 */
public final class FencedConsumer<K, V> implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(FencedConsumer.class);

    private final String groupId;
    private final String clientId;
    private final List<String> topics;
    private final WatermarkStore<Object> store; // null: watermarks private to this consumer, offsets in Kafka
    private final FencePolicy policy;
    private final StaleRecordPolicy stalePolicy;
    private final Duration closeTimeout;
    private final ConsumerEngine.Setup<K, V> setup;

    private final Object lock = new Object();
    private volatile ConsumerState state = ConsumerState.NEW;
    // this run's Kafka clients, ownership and scheduler: a restart after a failure makes new ones
    private volatile ConsumerEngine<K, V> engine;
    private volatile Throwable failure;
    // set as soon as the loop fails, before it shuts down (which can take the close timeout several times)
    private volatile Throwable failing;
    private Thread pollThread;
    // the poll thread and the key-parallel workers waiting to run again what a transient failure rolled back
    private final AtomicInteger retrying = new AtomicInteger();
    private final AtomicLong retries = new AtomicLong();
    private final ConsumerEngine.Lifecycle lifecycle = new Lifecycle();

    FencedConsumer(FencedConsumerBuilder<K, V> builder, ConsumerSettings settings) {
        this.groupId = settings.groupId();
        this.clientId = settings.clientId();
        this.topics = settings.topics();
        this.store = builder.store;
        this.policy = settings.policy();
        this.stalePolicy = settings.staleRecords();
        this.closeTimeout = settings.closeTimeout();
        this.setup = new ConsumerEngine.Setup<>(
                settings,
                store,
                appliedOffsets(store),
                builder.transactional && settings.maxConcurrency() > 1 ? recordTransactions(store) : null,
                builder.handler,
                builder.transactional,
                builder.keyDeserializer,
                builder.valueDeserializer,
                new ConsumerMeters(builder.meterRegistry, groupId, clientId, this::heldWatermarks),
                retrying,
                retries);
        this.engine = new ConsumerEngine<>(setup, lifecycle);
    }

    /** The store's loads with applied offsets, if it keeps them (PostgreSQL's, and fenced rows' over it). */
    private static AppliedOffsetStore appliedOffsets(WatermarkStore<?> store) {
        if (store instanceof PostgresWatermarkStore postgres) {
            return postgres.appliedOffsetStore();
        }
        return store instanceof AppliedOffsetStore applied ? applied : null;
    }

    /** A transactional key-parallel handler's transactions, in the store the builder checked is PostgreSQL's. */
    @SuppressWarnings("unchecked")
    private static RecordTransactions<Object> recordTransactions(WatermarkStore<?> store) {
        return (RecordTransactions<Object>)
                (RecordTransactions<?>) ((PostgresWatermarkStore) store).recordTransactions();
    }

    /** A builder for a consumer whose handler sees keys and values made by these deserializers. */
    public static <K, V> FencedConsumerBuilder<K, V> builder(
            Deserializer<K> keyDeserializer, Deserializer<V> valueDeserializer) {
        return new FencedConsumerBuilder<>(keyDeserializer, valueDeserializer);
    }

    /**
     * Checks now, on the calling thread, what {@link #run()} checks first: that every subscribed topic and its
     * dead-letter topic exist (a missing one is looked for again for up to 3 s, for a topic made just before).
     * For a caller that must fail before it hands the loop to a thread of its own (an application starting
     * up): {@link #start()} reports the same failure only through its future. Call it before {@link #run()}
     * or {@link #start()}, not while the loop runs. A {@link #close()} meanwhile waits for the check.
     *
     * @throws MissingTopicException naming every missing topic and how to create them
     * @throws org.apache.kafka.common.errors.InterruptException if interrupted meanwhile, with the interrupt flag
     *     set
     * @throws IllegalStateException if already started or closed
     */
    public void checkTopics() {
        synchronized (lock) {
            requireNew();
            engine.requireTopicsExist();
        }
    }

    /**
     * Subscribes and polls on the calling thread until {@link #close()} is called or a failure stops it.
     * Transient failures ({@value FencedConsumerConfig#RETRY_MAX_MS_CONFIG}) are retried meanwhile.
     *
     * @throws IllegalStateException if already started or closed
     * @throws RecordHandlingException if the handler threw
     * @throws DeadLetterException if a refused record could not be written to the dead-letter topic
     * @throws WatermarkStoreException if the store could not load or save
     */
    public void run() {
        ConsumerEngine<K, V> run;
        synchronized (lock) {
            requireNew();
            state = ConsumerState.RUNNING;
            pollThread = Thread.currentThread();
            run = engine;
        }
        LOG.info(
                "fenced consumer {} of group {} starting on {} (store {}, policy {}, stale records {})",
                clientId,
                groupId,
                topics,
                store == null ? "none: this consumer's heap" : store.getClass().getSimpleName(),
                policy,
                stalePolicy.configValue());
        run.run();
    }

    /**
     * Runs {@link #run()} on a new thread named after the client id.
     *
     * @return completes when the loop ends: normally after {@link #close()}, exceptionally with the failure
     *     that stopped it
     */
    public CompletableFuture<Void> start() {
        CompletableFuture<Void> done = new CompletableFuture<>();
        Thread thread = new Thread(
                () -> {
                    try {
                        run();
                        done.complete(null);
                    } catch (Throwable e) {
                        if (state == ConsumerState.CLOSED && e instanceof IllegalStateException && pollThread == null) {
                            done.complete(null); // closed before the thread got to run
                        } else {
                            done.completeExceptionally(e);
                        }
                    }
                },
                clientId);
        thread.setDaemon(true);
        thread.start();
        return done;
    }

    /**
     * Starts a consumer that a failure stopped ({@link ConsumerState#FAILED}) again, as {@link #start()} does:
     * with new Kafka clients, from what the store (or, without one, Kafka) committed, in the same group and with
     * the same handler, deserializers and settings. Nothing of the failed run is kept: its unit (or its records
     * in flight) was rolled back or not committed, and is read again. If the failure was the handler's, it
     * will most likely fail again on the same record.
     *
     * @return completes when the restarted loop ends, as {@link #start()}'s
     * @throws IllegalStateException unless the consumer is {@link ConsumerState#FAILED} (a running consumer
     *     needs no restart; a closed one stays closed)
     */
    public CompletableFuture<Void> restart() {
        synchronized (lock) {
            if (state == ConsumerState.RUNNING && failing != null) {
                throw new IllegalStateException("consumer " + clientId + " of group " + groupId + " failed and is"
                        + " still shutting down; restart once it has");
            }
            if (state != ConsumerState.FAILED) {
                throw new IllegalStateException(
                        "consumer " + clientId + " of group " + groupId + " is " + state + ", not FAILED");
            }
            if (!engine.isTerminated()) {
                throw new IllegalStateException("consumer " + clientId + " of group " + groupId + " failed, and"
                        + " handlers of the failed run still run: a restart would hand their records to a second"
                        + " handler at once; restart once they have returned");
            }
            engine = new ConsumerEngine<>(setup, lifecycle);
            failure = null;
            failing = null;
            pollThread = null;
            state = ConsumerState.NEW;
        }
        LOG.info("fenced consumer {} of group {} restarts", clientId, groupId);
        return start();
    }

    /**
     * What the consumer is doing now: {@link ConsumerState#RETRYING} while a unit, record or group that a
     * transient failure rolled back waits to run again (until it has). Any thread.
     */
    public ConsumerState state() {
        ConsumerState now = state;
        if (now == ConsumerState.RUNNING && failing != null) {
            return ConsumerState.FAILED; // the loop failed and is shutting down: it makes no progress any more
        }
        return now == ConsumerState.RUNNING && retrying.get() > 0 ? ConsumerState.RETRYING : now;
    }

    /**
     * The failure that stopped the consumer ({@link ConsumerState#FAILED}), from the moment the loop failed
     * (while it still shuts down), else null. Any thread.
     */
    public Throwable failure() {
        Throwable done = failure;
        return done != null ? done : failing;
    }

    /** Attempts run again after transient (or retried handler) failures since the consumer was built. */
    public long retries() {
        return retries.get();
    }

    /** Number of watermarks held in memory now: the keys of the partitions this consumer owns. */
    public int heldWatermarks() {
        return engine.watermarksHeld();
    }

    /**
     * Key-parallel mode: records polled whose offsets are not committable yet (queued, running, or finished
     * above an unfinished one), over the owned partitions, as of the last poll; at most about {@value
     * FencedConsumerConfig#MAX_IN_FLIGHT_PER_PARTITION_CONFIG} plus one poll's records per partition. 0 for the
     * serial consumer.
     */
    public int recordsInFlight() {
        return engine.recordsHeld();
    }

    /** The partitions this consumer owns now (as of its last rebalance); empty before it joins. */
    public Set<TopicPartition> assignment() {
        return engine.assignment();
    }

    /** The client id, also the name of the thread {@link #start()} makes. */
    public String clientId() {
        return clientId;
    }

    /**
     * Stops polling after the current record's batch is committed, leaves the group and waits up to
     * {@value FencedConsumerConfig#CLOSE_TIMEOUT_MS_CONFIG} for that. Safe to call twice and from any thread,
     * including from the handler. A consumer waiting to retry stops waiting.
     *
     * <p>If the loop has not ended by then (a handler still running, a store or Kafka call still waiting), this
     * returns with a warning and the loop ends on its own: it finishes what it was doing (the serial consumer: the
     * rest of the current poll's records, then the unit's save and offset commit), and only then leaves the
     * group; until then it is still a member. A consumer of the same group started meanwhile is given none of its
     * partitions until it has left, and then reads them on from what it saved. If the loop outlasts {@code
     * max.poll.interval.ms} (or the new consumer takes over its {@code group.instance.id}: static membership hands
     * it the partitions at once), the group expels it while its handler still runs and hands its partitions over.
     * For the serial consumer with a store, the new owner's units then wait on each partition's lock for the old
     * unit and read on after what it saved (each record applied once); with {@link
     * FencedConsumerBuilder#heapOnlyWatermarksLostOnRestart()} nothing holds the new owner back, and it applies
     * again, from Kafka's last committed offset, what the old handler is still applying, whose write may then
     * land after a newer one. {@link #start()}'s future completes once the loop has ended: wait for it, not only
     * for this, before the application exits or hands the group's work on.
     */
    @Override
    public void close() {
        ConsumerState previous;
        ConsumerEngine<K, V> run;
        synchronized (lock) {
            previous = state;
            state = ConsumerState.CLOSED;
            run = engine;
            lock.notifyAll(); // a poll thread backing off
        }
        if (previous == ConsumerState.NEW) {
            run.closeUnstarted(); // it never ran: a later close has nothing to wait for
            return;
        }
        if (previous == ConsumerState.FAILED) {
            run.closeDeserializers(); // the rest went when it failed
            return;
        }
        if (Thread.currentThread() == pollThread) {
            return;
        }
        run.wakeup();
        if (run.isWorkerThread()) {
            return; // a handler: the poll thread's drain waits for this very record, so waiting here would stall
        }
        try {
            if (!run.awaitStopped(closeTimeout)) {
                LOG.warn("fenced consumer {} of group {} did not stop within {}", clientId, groupId, closeTimeout);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void requireNew() {
        if (state != ConsumerState.NEW) {
            throw new IllegalStateException("consumer " + clientId + " of group " + groupId + " is " + state);
        }
    }

    /** What a run reads of the consumer's state, and how it reports its end. */
    private final class Lifecycle implements ConsumerEngine.Lifecycle {
        @Override
        public boolean running() {
            return state == ConsumerState.RUNNING;
        }

        @Override
        public boolean backOff(long nanos) {
            long deadline = System.nanoTime() + nanos;
            synchronized (lock) {
                try {
                    while (state == ConsumerState.RUNNING) {
                        long left = deadline - System.nanoTime();
                        if (left <= 0) {
                            return true;
                        }
                        lock.wait(Math.max(1, left / 1_000_000));
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return false;
            }
        }

        @Override
        public void failing(Throwable e) {
            failing = e;
        }

        @Override
        public boolean stopped(Throwable e) {
            synchronized (lock) {
                if (state == ConsumerState.CLOSED) {
                    return true;
                }
                state = ConsumerState.FAILED;
                failure = e;
                return false;
            }
        }
    }

    @Override
    public String toString() {
        return "FencedConsumer[" + clientId + ", group " + groupId + ", " + topics + "]";
    }
}
