package dev.fencing.lock.etcd.internal;

import dev.fencing.lock.LeaseLoss;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One watch of deletions under the registry's prefix, shared by all its holds: a deletion of a hold's key by
 * anyone but the holder (an operator, a revoked or expired lease) ends the hold with {@link LeaseLoss#NODE_GONE}.
 * jetcd opens a gRPC stream per watcher; one per grant cost about a fifth of an uncontended acquire+release.
 *
 * <p>A hold is covered once the watch started at most one revision after its key was created, or after a read at
 * which its key still existed with its create revision (a deleted key does not come back with the same create
 * revision), and the watch has not broken since. A watch that breaks (an error, a compacted start revision, a
 * stream that ends) is closed and replaced after one read of every key under the prefix at one revision: a
 * hold whose key that read does not find ends, and the new watch starts at the revision after it. Until the
 * read answers, holds read valid, as a hold whose own watch failed did; their keep-alive deadline ends them if
 * etcd stays out of reach. Thread-safe.
 */
final class KeyDeletionWatch {
    private static final Logger LOG = LoggerFactory.getLogger(KeyDeletionWatch.class);

    private final EtcdLockRegistry registry;
    private final KeepAlives keepAlives;
    /** Every lock key of the registry starts with this: the prefix and its slash. */
    private final ByteSequence range;
    /** The holds by key, from before their key is created until they are released. */
    private final ConcurrentMap<ByteSequence, EtcdHold> holds = new ConcurrentHashMap<>();

    /** The watch now, or the one being replaced; null until the first hold is watched. Guarded by this. */
    private Epoch current;

    private boolean closed;

    /** One jetcd watcher and the revision it starts at. */
    private static final class Epoch {
        final long from;
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
        synchronized (this) {
            if (closed || hold.loss() != null) {
                return;
            }
            if (current == null) {
                current = open(hold.token + 1);
                return;
            }
            if (current.broken || current.from <= hold.token + 1) {
                return; // a broken watch's replacement reads every key whose token is set, this one's too
            }
        }
        // the watch started after the key's creation (it was replaced meanwhile): it covers the key only once a
        // read finds the key still there
        confirm(hold);
    }

    /** Stops reporting to the hold. */
    void forget(EtcdHold hold) {
        ByteSequence key = hold.keyBytes;
        if (key != null) {
            holds.remove(key, hold);
        }
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

    /** Called holding the monitor: a watch from {@code from}, or a broken one replaced later if jetcd refuses it. */
    private Epoch open(long from) {
        Epoch epoch = new Epoch(from);
        WatchOption option = WatchOption.builder()
                .isPrefix(true)
                .withRevision(from)
                .withNoPut(true)
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
                            response -> deleted(response),
                            failure -> keepAlives.now(() -> broke(epoch, failure)),
                            () -> keepAlives.now(() -> broke(epoch, null)));
        } catch (RuntimeException e) {
            LOG.debug("could not watch lock keys under {}: {}", registry.prefix, e.toString());
            epoch.broken = true;
            keepAlives.later(this::replace);
        }
        return epoch;
    }

    private void deleted(WatchResponse response) {
        for (WatchEvent event : response.getEvents()) {
            if (event.getEventType() == WatchEvent.EventType.DELETE) {
                EtcdHold hold = holds.get(event.getKeyValue().getKey());
                if (hold != null) {
                    registry.lostLater(hold, LeaseLoss.NODE_GONE);
                }
            }
        }
    }

    /** On the keep-alive thread: a watch that failed or ended (also after its own close, which is ignored). */
    private void broke(Epoch epoch, Throwable failure) {
        synchronized (this) {
            if (closed || epoch != current || epoch.broken) {
                return;
            }
            epoch.broken = true;
        }
        LOG.debug(
                "watch of lock keys under {} {}; reading them again",
                registry.prefix,
                failure == null ? "ended" : "failed: " + failure);
        // jetcd resumes a watcher by itself after a retryable error: this one is replaced, so it is closed
        closeQuietly(epoch.watcher);
        replace();
    }

    private void replace() {
        if (registry.isClosed()) {
            return;
        }
        GetOption everyKey =
                GetOption.builder().isPrefix(true).withKeysOnly(true).build();
        registry.client.getKVClient().get(range, everyKey).whenComplete((response, failure) -> {
            if (failure != null) {
                LOG.debug("could not read the lock keys under {}: {}", registry.prefix, failure.toString());
                keepAlives.later(this::replace);
            } else {
                replaced(response);
            }
        });
    }

    /** Opens the new watch after {@code read}'s revision and ends the holds whose keys that read did not find. */
    private void replaced(GetResponse read) {
        long revision = read.getHeader().getRevision();
        Map<ByteSequence, Long> created = new HashMap<>();
        for (KeyValue kv : read.getKvs()) {
            created.put(kv.getKey(), kv.getCreateRevision());
        }
        List<EtcdHold> gone = new ArrayList<>();
        synchronized (this) {
            if (closed) {
                return;
            }
            current = open(revision + 1);
            for (EtcdHold hold : holds.values()) {
                long token = hold.token;
                // a hold whose token is not set yet is checked by its own watch(); a key created after the read is
                // covered by the new watch
                if (token != 0 && token <= revision && !Long.valueOf(token).equals(created.get(hold.keyBytes))) {
                    gone.add(hold);
                }
            }
        }
        gone.forEach(hold -> registry.lostLater(hold, LeaseLoss.NODE_GONE));
    }

    private void confirm(EtcdHold hold) {
        registry.client.getKVClient().get(hold.keyBytes).whenComplete((response, failure) -> {
            if (hold.loss() != null || registry.isClosed()) {
                return;
            }
            if (failure != null) {
                keepAlives.later(() -> confirm(hold));
                return;
            }
            List<KeyValue> kvs = response.getKvs();
            if (kvs.isEmpty() || kvs.get(0).getCreateRevision() != hold.token) {
                registry.lostLater(hold, LeaseLoss.NODE_GONE);
                return;
            }
            boolean again;
            synchronized (this) {
                // a broken watch's replacement reads this key too
                again = !closed
                        && !current.broken
                        && current.from > response.getHeader().getRevision() + 1;
            }
            if (again) {
                confirm(hold);
            }
        });
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
