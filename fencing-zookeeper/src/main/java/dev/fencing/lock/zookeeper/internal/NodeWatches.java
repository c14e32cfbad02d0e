package dev.fencing.lock.zookeeper.internal;

import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Watches held nodes, each from {@link #WATCH_AFTER_NANOS} after its grant, and reports a node deleted while
 * its hold lives (an operator's delete, a lock parent deleted with its children), or already gone when the
 * watch is set, to {@code gone}, on ZooKeeper's event thread. So a lease reads valid after its node was deleted
 * for at most that long plus the watch's delivery (a round trip), where nothing but {@code verify()} saw it
 * before. A release marks its hold invalid before it deletes the node, so the event of its own delete is
 * reported for a hold already ended. A watch fires once: one that fired on a write of the node's data is set
 * again, and one whose request failed (other than with NONODE) is tried again in the next round. ZooKeeper keeps a watch across reconnections of the session; a session's end invalidates the hold
 * anyway. The watches are set by {@link #watchDue()}, on the pause detector's round.
 */
final class NodeWatches {
    private static final Logger LOG = LoggerFactory.getLogger(NodeWatches.class);

    /**
     * How long after its grant a hold's node is watched: a lease held for a moment (acquire, write, release)
     * costs ZooKeeper no watch, which was an eighth of an uncontended acquire and release when set at every
     * grant; a lease held longer is watched from then on.
     */
    static final long WATCH_AFTER_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

    /** The most nodes one round sets watches on, so that a burst of grants cannot stretch a detector round. */
    static final int WATCHES_PER_ROUND = 64;

    private final CuratorFramework client;
    private final Consumer<Hold> gone;
    /** Holds whose nodes are not watched yet, in the order they were granted. */
    private final Queue<Hold> unwatched = new ConcurrentLinkedQueue<>();

    private volatile boolean enabled = true;

    NodeWatches(CuratorFramework client, Consumer<Hold> gone) {
        this.client = client;
        this.gone = gone;
    }

    /** Has the node of a hold just granted watched once it is old enough. */
    void watchLater(Hold hold) {
        if (enabled) {
            unwatched.add(hold);
        }
    }

    /**
     * Watches the nodes of the live holds granted long enough ago, at most {@link #WATCHES_PER_ROUND} (the
     * rest in the next rounds).
     */
    void watchDue() {
        long now = System.nanoTime();
        int armed = 0;
        for (Hold hold = unwatched.peek();
                hold != null && now - hold.grantedAtNanos >= WATCH_AFTER_NANOS && armed < WATCHES_PER_ROUND;
                hold = unwatched.peek()) {
            unwatched.poll();
            if (hold.loss() == null) {
                watch(hold);
                armed++;
            }
        }
    }

    /**
     * Sets the watch on the handle that owns the node, not through Curator: Curator's background calls wait for
     * its connected flag, which its known issue after an expiry leaves stuck at false on a connected handle (a
     * hold granted then reads valid, see {@link LockRegistry#disconnected}), and give up after the retry policy.
     * A request that fails otherwise than NONODE left no watch, so the hold is queued again for the next round,
     * until the watch is set, the node is found gone, or the hold ends.
     */
    private void watch(Hold hold) {
        ZooKeeper handle = hold.owningHandle();
        if (handle == null) {
            return; // its session was gone at registration: invalid from the start
        }
        try {
            // getData, not exists: on a node that is gone already it answers NONODE and leaves no watch
            // behind (an exists watch would wait for the node's creation, never to come: its name is unique)
            handle.getData(
                    ZKPaths.fixForNamespace(client.getNamespace(), hold.nodePath),
                    event -> {
                        if (event.getType() == Watcher.Event.EventType.NodeDeleted) {
                            gone.accept(hold);
                        } else if (event.getType() == Watcher.Event.EventType.NodeDataChanged && hold.loss() == null) {
                            // a watch fires once: someone wrote the node's data (Curator's Revoker does), and
                            // its deletion must still be seen, so watch it again
                            watch(hold);
                        }
                    },
                    (resultCode, path, context, data, stat) -> {
                        if (resultCode == KeeperException.Code.NONODE.intValue()) {
                            gone.accept(hold);
                        } else if (resultCode != KeeperException.Code.OK.intValue()) {
                            retry(hold, KeeperException.Code.get(resultCode));
                        }
                    },
                    null);
        } catch (RuntimeException e) {
            retry(hold, e);
        }
    }

    /**
     * Queues a hold whose watch could not be set (a lost connection, a moved session) for the next round, while
     * it is valid and its session's handle open; a closed handle's holds read invalid (SESSION_LOST) anyway.
     */
    private void retry(Hold hold, Object failure) {
        ZooKeeper handle = hold.owningHandle();
        if (hold.loss() == null && handle != null && handle.getState().isAlive()) {
            LOG.debug("could not watch lock node {} ({}); trying again", hold.nodePath, failure);
            unwatched.add(hold);
        } else {
            LOG.debug("could not watch lock node {} of an ended hold: {}", hold.nodePath, failure);
        }
    }

    /** Test hook: whether holds granted from now on have their nodes watched (by default they do). */
    void enabled(boolean watch) {
        this.enabled = watch;
    }
}
