package dev.fencing.testsupport;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;

/** Faults on ZooKeeper sessions that a real cluster produces, made to order. */
public final class ZooKeeperSessions {
    private ZooKeeperSessions() {}

    /**
     * Expires a session on the server at once, as if its client had been silent past the timeout: the
     * server deletes the session's ephemeral nodes and the client learns of it at its next contact.
     *
     * <p>Works by opening a second handle with the same session id and password and closing it: the
     * server then ends the session (Curator's {@code KillSession} only expires the client side).
     */
    public static void expire(String connectString, long sessionId, byte[] sessionPassword) {
        CountDownLatch connected = new CountDownLatch(1);
        Watcher watcher = event -> {
            if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        };
        try {
            ZooKeeper twin = new ZooKeeper(connectString, 10_000, watcher, sessionId, sessionPassword);
            try {
                if (!connected.await(10, TimeUnit.SECONDS)) {
                    throw new IllegalStateException(
                            "could not attach to session 0x" + Long.toHexString(sessionId) + " within 10 s");
                }
            } finally {
                twin.close();
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while expiring a session", e);
        }
    }

    /**
     * Expires a session on the client side, as Curator's {@code KillSession} does: the handle gets an
     * Expired event at once. Curator then replaces its handle, and closing the old one ends the session
     * on the server, which deletes its ephemeral nodes, before Curator reports LOST to its listeners.
     */
    public static void injectExpiry(ZooKeeper handle) {
        handle.getTestable().injectSessionExpiration();
    }
}
