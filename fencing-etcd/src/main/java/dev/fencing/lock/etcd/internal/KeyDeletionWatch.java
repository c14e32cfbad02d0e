package dev.fencing.lock.etcd.internal;

import dev.fencing.lock.LeaseLoss;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One watch of the keys under the registry's prefix, shared by all its holds: a deletion of a hold's key by anyone
 * but the holder (an operator, a revoked or expired lease) ends the hold with {@link LeaseLoss#NODE_GONE}, and so
 * does a write of it after its creation. A hold's key is written once, when it is created; a later put is another
 * client's, and takes the key off the hold's etcd lease (onto its own, or none): the key keeps its create revision
 * and still stands first among the contenders, but the end of the hold's lease no longer deletes it, and its value
 * is no longer the holder's. jetcd opens a gRPC stream per watcher; one per grant cost about a fifth of an
 * uncontended acquire+release.
 *
 * <p>A hold is covered once the watch started at most one revision after its key was created, or after a read at
 * which its key still existed with its create revision and had not been written since (a deleted key does not come
 * back with the same create revision), and the watch has not broken since. A hold that is not covered is confirmed by a read of its own key;
 * one that stays uncovered for the lease TTL (less the keep-alive deadline's margin) ends with {@link
 * LeaseLoss#CONNECTION_SUSPENDED}: its key may still be there, but nothing here can tell. Thread-safe.
 */
final class KeyDeletionWatch {
    private static final Logger LOG = LoggerFactory.getLogger(KeyDeletionWatch.class);

    /** The first wait before a watch that broke soon after it opened is replaced; doubled up to the most. */
    static final long MIN_BACKOFF_MILLIS = 50;
    /** The longest wait before a replacement, at most a keep-alive period. */
    static final long MAX_BACKOFF_MILLIS = 1000;

    private final EtcdLockRegistry registry;
    private final KeepAlives keepAlives;
    /** Every lock key of the registry starts with this: the prefix and its slash. */
    private final ByteSequence range;
    /** The holds by key, from before their key is created until they are released. */
    private final ConcurrentMap<ByteSequence, EtcdHold> holds = new ConcurrentHashMap<>();
    /**
     * The holds whose key no working watch covers and no read has confirmed since, with the {@code System.nanoTime}
     * since when. Added to holding this monitor.
     */
    private final ConcurrentMap<EtcdHold, Long> unconfirmed = new ConcurrentHashMap<>();
    /** How long a hold may stay unconfirmed: as long as a keep-alive deadline lasts past its request. */
    private final long boundNanos;

    private final long maxBackoffMillis;

    /** The watch now, or the one being replaced; null until the first hold is watched. Guarded by this. */
    private Epoch current;

    private boolean closed;
    /** The wait before the next replacement. Guarded by this. */
    private long backoffMillis;

    private volatile Function<ByteSequence, CompletableFuture<GetResponse>> reads;

    /** One jetcd watcher and the revision it starts at. */
    private static final class Epoch {
        final long from;
        final long openedAtNanos = System.nanoTime();
        /** Set once, right after the watcher is made, by the thread that made it. */
        volatile Watch.Watcher watcher;
        /** Guarded by the {@code KeyDeletionWatch}. */
        boolean broken;

        Epoch(long from) {
            this.from = from;
        }
    }

    KeyDeletionWatch(EtcdLockRegistry registry, KeepAlives keepAlives) {
        this.registry = registry;
        this.keepAlives = keepAlives;
        this.range = ByteSequence.from(registry.prefix + "/", StandardCharsets.UTF_8);
        long ttlNanos = TimeUnit.SECONDS.toNanos(registry.ttlSeconds);
        this.boundNanos = ttlNanos - ttlNanos / EtcdLockRegistry.MARGIN_DIVISOR;
        this.maxBackoffMillis = Math.min(MAX_BACKOFF_MILLIS, TimeUnit.NANOSECONDS.toMillis(keepAlives.periodNanos()));
        this.reads = key -> registry.client.getKVClient().get(key);
    }

    /**
     * Registers the hold before its key is created, so that a deletion the watch reports between the key's creation
     * and {@link #watch} reaches it. Any deletion of that key reported from now on ends the hold: the key is named
     * after the hold's new etcd lease, and etcd reports no deletion of a key that does not exist.
     */
    void track(EtcdHold hold) {
        holds.put(hold.keyBytes, hold);
    }

    /** Makes sure the watch covers the hold, whose key was created at {@code hold.token}. */
    void watch(EtcdHold hold) {
        Epoch epoch;
        synchronized (this) {
            if (closed || hold.loss() != null) {
                return;
            }
            if (current == null) {
                current = open(hold.token + 1);
                return;
            }
            if (!current.broken && current.from <= hold.token + 1) {
                return;
            }
            unconfirmed(List.of(hold), System.nanoTime());
            if (current.broken) {
                return; // the replacement confirms it
            }
            epoch = current;
        }
        // the watch started after the key's creation (it was replaced meanwhile): it covers the key only once a
        // read finds the key still there
        confirm(hold, epoch);
    }

    /** Stops reporting to the hold. */
    void forget(EtcdHold hold) {
        ByteSequence key = hold.keyBytes;
        if (key != null) {
            holds.remove(key, hold);
        }
        unconfirmed.remove(hold);
    }

    /**
     * Whether no working watch has covered the hold, nor a read confirmed it, for longer than the bound: the caller
     * ends it with {@link LeaseLoss#CONNECTION_SUSPENDED}.
     */
    boolean lapsed(EtcdHold hold) {
        Long since = unconfirmed.get(hold);
        return since != null && System.nanoTime() - since - boundNanos >= 0;
    }

    /** Closes the watch; no other is opened from now on. */
    void close() {
        Epoch last;
        synchronized (this) {
            closed = true;
            last = current;
        }
        if (last != null) {
            closeQuietly(last.watcher);
        }
    }

    /** Test hook: the watcher now, or null. */
    synchronized Watch.Watcher watcherForTest() {
        return current == null ? null : current.watcher;
    }

    /** Test hook: sends this watch's reads of single keys (its own holds', and the prefix's for a revision). */
    void readsForTest(Function<ByteSequence, CompletableFuture<GetResponse>> reads) {
        this.reads = Objects.requireNonNull(reads);
    }

    /** Called holding the monitor: a watch from {@code from}, or a broken one replaced later if jetcd refuses it. */
    private Epoch open(long from) {
        Epoch epoch = new Epoch(from);
        WatchOption option = WatchOption.builder()
                .isPrefix(true)
                .withRevision(from)
                // puts too: a put on a held key after its creation is another client's
                // a member cut off from the leader would otherwise keep the stream open and silent
                .withRequireLeader(true)
                .build();
        try {
            // jetcd calls these with its own lock held, which close() takes too: what takes this monitor runs on
            // the keep-alive thread, never in the callback
            epoch.watcher = registry.client
                    .getWatchClient()
                    .watch(
                            range,
                            option,
                            response -> changed(response),
                            failure -> {
                                long at = System.nanoTime();
                                keepAlives.now(() -> broke(epoch, failure, at));
                            },
                            () -> {
                                long at = System.nanoTime();
                                keepAlives.now(() -> broke(epoch, null, at));
                            });
        } catch (RuntimeException e) {
            LOG.debug("could not watch lock keys under {}: {}", registry.prefix, e.toString());
            brokenLocked(epoch, System.nanoTime());
        }
        return epoch;
    }

    private void changed(WatchResponse response) {
        for (WatchEvent event : response.getEvents()) {
            KeyValue kv = event.getKeyValue();
            EtcdHold hold = holds.get(kv.getKey());
            // the put that created the key (version 1) may arrive before the hold knows its revision
            if (hold != null && (event.getEventType() == WatchEvent.EventType.DELETE || kv.getVersion() > 1)) {
                registry.lostLater(hold, LeaseLoss.NODE_GONE);
            }
        }
    }

    /** Whether a read found the hold's key as the hold created it: with its create revision, never written since. */
    static boolean asCreated(List<KeyValue> kvs, EtcdHold hold) {
        return kvs.size() == 1
                && kvs.get(0).getCreateRevision() == hold.token
                && kvs.get(0).getVersion() == 1;
    }

    /** On the keep-alive thread: a watch that failed or ended (also after its own close, which is ignored). */
    private void broke(Epoch epoch, Throwable failure, long at) {
        synchronized (this) {
            if (closed || epoch != current || epoch.broken) {
                return;
            }
            brokenLocked(epoch, at);
        }
        LOG.debug(
                "watch of lock keys under {} {}; replacing it and reading the held keys again",
                registry.prefix,
                failure == null ? "ended" : "failed: " + failure);
        // jetcd resumes a watcher by itself after a retryable error: this one is replaced, so it is closed
        closeQuietly(epoch.watcher);
    }

    /**
     * Holding the monitor: from {@code at} on, no watch covers a hold whose key is created; the replacement waits
     * longer each time a watch breaks soon after it opened, so that watches that fail at once while reads answer do
     * not follow each other at the rate of a round trip.
     */
    private void brokenLocked(Epoch epoch, long at) {
        epoch.broken = true;
        unconfirmed(holds.values().stream().filter(hold -> hold.token != 0).toList(), at);
        boolean livedLong = at - epoch.openedAtNanos >= TimeUnit.MILLISECONDS.toNanos(maxBackoffMillis);
        backoffMillis = livedLong ? 0 : nextBackoffMillis(backoffMillis, maxBackoffMillis);
        keepAlives.after(this::replace, TimeUnit.MILLISECONDS.toNanos(backoffMillis));
    }

    /** The wait after {@code previousMillis}: doubled, at least the least, at most {@code maxMillis}. */
    static long nextBackoffMillis(long previousMillis, long maxMillis) {
        return Math.min(maxMillis, Math.max(MIN_BACKOFF_MILLIS, 2 * previousMillis));
    }

    /** Holding the monitor: marks the holds not covered since {@code at}, unless they were already. */
    private void unconfirmed(List<EtcdHold> uncovered, long at) {
        boolean added = false;
        for (EtcdHold hold : uncovered) {
            if (hold.loss() == null && unconfirmed.putIfAbsent(hold, at) == null) {
                added = true;
            }
        }
        if (added) {
            keepAlives.after(this::expire, at + boundNanos - System.nanoTime());
        }
    }

    /** Ends the holds that stayed unconfirmed for the bound; a check of such a hold finds it by itself too. */
    private void expire() {
        for (Map.Entry<EtcdHold, Long> entry : unconfirmed.entrySet()) {
            EtcdHold hold = entry.getKey();
            if (hold.loss() != null) {
                unconfirmed.remove(hold, entry.getValue());
            } else if (lapsed(hold)) {
                LOG.debug(
                        "no watch nor read has confirmed lock key {} for {} s; its lease ends",
                        hold.key,
                        registry.ttlSeconds);
                registry.lostLater(hold, LeaseLoss.CONNECTION_SUSPENDED);
                unconfirmed.remove(hold, entry.getValue());
            }
        }
    }

    /**
     * Opens a new watch from a revision read first, then confirms every uncovered hold by a read of its key: each
     * read answers at that revision or a later one, and the watch reports every deletion after it. Never a read of
     * every key under the prefix, whose answer grows with other processes' keys and nested prefixes' (past gRPC's
     * 4 MiB inbound limit, the read would fail every time).
     */
    private void replace() {
        if (registry.isClosed()) {
            return;
        }
        read(range).whenComplete((response, failure) -> {
            if (failure != null) {
                LOG.debug("could not read the revision of {}: {}", registry.prefix, failure.toString());
                long delay;
                synchronized (this) {
                    backoffMillis = nextBackoffMillis(backoffMillis, maxBackoffMillis);
                    delay = backoffMillis;
                }
                keepAlives.after(this::replace, TimeUnit.MILLISECONDS.toNanos(delay));
            } else {
                keepAlives.now(() -> replaced(response.getHeader().getRevision()));
            }
        });
    }

    private void replaced(long revision) {
        Epoch epoch;
        List<EtcdHold> uncovered;
        synchronized (this) {
            if (closed) {
                return;
            }
            current = open(revision + 1);
            epoch = current;
            if (epoch.broken) {
                return; // jetcd refused it: replaced again
            }
            uncovered = List.copyOf(unconfirmed.keySet());
        }
        uncovered.forEach(hold -> confirm(hold, epoch));
    }

    /** Reads the hold's key, for the watch {@code epoch}: again after a failure, while that watch lasts. */
    private void confirm(EtcdHold hold, Epoch epoch) {
        read(hold.keyBytes).whenComplete((response, failure) -> {
            if (registry.isClosed()) {
                // the entry stays until the hold is marked: close() marks every hold after it sets the flag, and a
                // check that finds no entry must find the mark (EtcdLockRegistry#isValid reads the entry first)
                return;
            }
            if (hold.loss() != null || holds.get(hold.keyBytes) != hold) {
                unconfirmed.remove(hold);
                return;
            }
            if (failure != null) {
                LOG.debug("could not read lock key {}: {}", hold.key, failure.toString());
                keepAlives.later(() -> {
                    if (lasts(epoch)) {
                        confirm(hold, epoch);
                    }
                });
                return;
            }
            List<KeyValue> kvs = response.getKvs();
            if (!asCreated(kvs, hold)) {
                registry.lostLater(hold, LeaseLoss.NODE_GONE);
                unconfirmed.remove(hold);
                return;
            }
            boolean again;
            synchronized (this) {
                if (closed || epoch != current || epoch.broken) {
                    return; // the replacement reads it again
                }
                again = epoch.from > response.getHeader().getRevision() + 1;
                if (!again) {
                    unconfirmed.remove(hold);
                }
            }
            if (again) {
                confirm(hold, epoch);
            }
        });
    }

    private synchronized boolean lasts(Epoch epoch) {
        return !closed && epoch == current && !epoch.broken;
    }

    /** One key, bounded by the request timeout: a member that does not answer must not hold a confirmation up. */
    private CompletableFuture<GetResponse> read(ByteSequence key) {
        return reads.apply(key).orTimeout(registry.requestTimeout.toNanos(), TimeUnit.NANOSECONDS);
    }

    private static void closeQuietly(Watch.Watcher watcher) {
        if (watcher == null) {
            return;
        }
        try {
            watcher.close();
        } catch (RuntimeException e) {
            LOG.debug("could not close a watch: {}", e.toString());
        }
    }
}
