package dev.fencing.lock.zookeeper.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.lock.FencedLock;
import dev.fencing.lock.Lease;
import dev.fencing.lock.zookeeper.FencedLocks;
import dev.fencing.testsupport.EmbeddedZooKeeper;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.Test;

/**
 * Client A found the parent missing (its lock-node create got NoNode) and runs createSequenceParent.
 * Meanwhile client B had already re-created the parent (incarnation P2, writing the history). A reads
 * the history and stalls before its transaction. P2 hands out more tokens and is deleted (e.g. an operator's or a cleanup job's deleteall). A's multi
 * must then fail its history version check (or build on P2's base), or P3 could get a base below
 * tokens granted under P2 (the adversarial review measured P2's last token 29 and P3's first 23).
 */
class RecreatedParentRaceIT {

    @Test
    void aRecreatorStalledBeforeItsTransactionStillStartsAboveTheIncarnationMadeMeanwhile() throws Exception {
        String path = "/review/race/sku-1";
        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder().build();
                CuratorFramework aClient = start(zk);
                CuratorFramework bClient = start(zk);
                FencedLocks bLocks = FencedLocks.builder(bClient).build();
                FencedLocks aLocks = FencedLocks.builder(aClient).build()) {
            FencedLock b = bLocks.lock(path);
            b.runLocked(Lease::token); // P1
            bClient.delete().deletingChildrenIfNeeded().forPath(path); // P1 deleted
            // A's lock-node create gets NoNode here; before A reads the history, B recreates the parent:
            long p2First = b.runLocked(Lease::token); // P2, base BB
            long[] p2Last = new long[1];

            AtomicBoolean stalled = new AtomicBoolean();
            CuratorFramework stallingA = stallingBeforeFirstTransaction(aClient, stalled, () -> {
                // A is stalled (GC, slow network) between its history read and its transaction
                for (int i = 0; i < 10; i++) {
                    p2Last[0] = b.runLocked(Lease::token);
                }
                bClient.delete().deletingChildrenIfNeeded().forPath(path); // P2 deleted
            });
            LockParents.createSequenceParent(stallingA, path, null); // A, resumed: creates P3
            long p3First = aLocks.lock(path).runLocked(Lease::token);

            List<String> children = aClient.getChildren().forPath(path);
            assertThat(stalled).isTrue();
            assertThat(p3First)
                    .as(
                            "P2 first %d, P2 last %d, P3 first %d, P3 children %s: every grant after a recreation must"
                                    + " beat every grant before it",
                            p2First, p2Last[0], p3First, children)
                    .isGreaterThan(p2Last[0]);
        }
    }

    /**
     * Client A read the history of a deleted parent (P1's base) and stalled. Meanwhile B re-created the
     * parent (P2, on P1's base + 2^31), granted tokens under it, and P2 was deleted again. A's
     * transaction must fail its check of the history version and A must build on P2's base, not P1's:
     * otherwise P3 repeats P2's base and its tokens repeat P2's.
     */
    @Test
    void aRecreatorThatReadTheHistoryBeforeAnotherIncarnationCameAndWentBuildsOnThatIncarnationsBase()
            throws Exception {
        String path = "/review/race/sku-2";
        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder().build();
                CuratorFramework aClient = start(zk);
                CuratorFramework bClient = start(zk);
                FencedLocks bLocks = FencedLocks.builder(bClient).build();
                FencedLocks aLocks = FencedLocks.builder(aClient).build()) {
            FencedLock b = bLocks.lock(path);
            b.runLocked(Lease::token); // P1, base 0
            bClient.delete().deletingChildrenIfNeeded().forPath(path); // P1 deleted
            long[] p2 = new long[2];

            AtomicBoolean stalled = new AtomicBoolean();
            CuratorFramework stallingA = stallingBeforeFirstTransaction(aClient, stalled, () -> {
                // A has read P1's base from the history and is stalled; B re-creates the parent as P2
                p2[0] = b.runLocked(Lease::token);
                for (int i = 0; i < 10; i++) {
                    p2[1] = b.runLocked(Lease::token);
                }
                bClient.delete().deletingChildrenIfNeeded().forPath(path); // P2 deleted
            });
            LockParents.createSequenceParent(stallingA, path, null); // A, resumed: creates P3
            long p3First = aLocks.lock(path).runLocked(Lease::token);

            List<String> children = aClient.getChildren().forPath(path);
            assertThat(stalled).isTrue();
            assertThat(p2[0]).isGreaterThan(LockParents.INCARNATION_SPAN);
            assertThat(p3First)
                    .as(
                            "P2 first %d, P2 last %d, P3 first %d, P3 children %s: every grant after a recreation must"
                                    + " beat every grant before it",
                            p2[0], p2[1], p3First, children)
                    .isGreaterThan(p2[1]);
            assertThat(children).contains(LockParents.marker(2 * LockParents.INCARNATION_SPAN));
        }
    }

    interface Stall {
        void run() throws Exception;
    }

    /**
     * {@code real}, and every namespace view of it, with {@code stall} run once before the first
     * transaction is built: after the creator read the history, before its multi.
     */
    private static CuratorFramework stallingBeforeFirstTransaction(
            CuratorFramework real, AtomicBoolean stalled, Stall stall) {
        return (CuratorFramework) Proxy.newProxyInstance(
                CuratorFramework.class.getClassLoader(), new Class<?>[] {CuratorFramework.class}, (proxy, m, args) -> {
                    if (m.getName().equals("transaction") && stalled.compareAndSet(false, true)) {
                        stall.run();
                    }
                    Object result;
                    try {
                        result = m.invoke(real, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                    return m.getName().equals("usingNamespace")
                            ? stallingBeforeFirstTransaction((CuratorFramework) result, stalled, stall)
                            : result;
                });
    }

    private static CuratorFramework start(EmbeddedZooKeeper zk) {
        return Hooks.startedClient(zk.connectString());
    }
}
