package dev.fencing.lock.internal;

import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.curator.framework.api.transaction.CuratorTransactionResult;
import org.apache.curator.framework.api.transaction.OperationType;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Stat;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Makes and recognises the parents of {@link dev.fencing.lock.TokenSource#SEQUENCE} locks, so that a
 * sequence counter that restarted can never hand out a token below one granted before.
 *
 * <p>A SEQUENCE token is {@code base + sequence}. The lock's parent is created together with (one
 * ZooKeeper multi) a PERSISTENT marker child {@code fencing-base-<base>} and a PERSISTENT history node
 * {@value #HISTORY_ROOT}{@code <lock path>}. The marker is the parent's first child, so it takes
 * sequence number 0 and the first lock node gets 1:
 *
 * <ul>
 *   <li>The first time a path is created, the history node does not exist yet, and the base is 0: the
 *       token is the holder node's sequence number, 1 for the first grant as before.
 *   <li>The marker keeps the parent non-empty, so ZooKeeper's container reaper never deletes it (even if
 *       someone made it a CONTAINER) and a non-recursive {@code delete} fails with "not empty".
 *   <li>A parent without a marker is not this library's (a plain Curator lock's CONTAINER parent, a node
 *       made by hand or by an older version, or a marker deleted by hand): nothing is known about the
 *       tokens granted under it before, so the grant fails closed.
 *   <li>A recursive delete ({@code deleteall}) removes parent and marker, but not the history node,
 *       which lives elsewhere. When the library finds the parent missing but the history present, the
 *       path was used before: it writes the history node in a transaction that also proves the parent
 *       absent, and the zxid of that write becomes the new base. Every token granted under an earlier incarnation is below it: such a token is at most the
 *       old base plus the number of child creates and deletes of the old parent, each a transaction
 *       with its own zxid between the old base and the deletion, and the deletion precedes this write.
 * </ul>
 *
 * What is not covered: deleting the history node as well (a {@code deleteall} of {@value
 * #HISTORY_ROOT} or of {@code /}) makes the next creation look like the first one again, with base 0.
 * {@link dev.fencing.lock.TokenSource#ZXID} has no such limit.
 *
 * <p>Alternatives considered: a base taken from the parent's own {@code czxid} on every creation keeps
 * the guarantee without a history node, but gives even a brand-new lock zxid-sized tokens, so the token
 * would no longer be the sequence number in the normal case; refusing to re-create a parent that existed
 * before needs the same history node to know that it existed, and leaves the lock dead until an operator
 * steps in. Reading the base costs nothing on the acquire path: Curator lists the parent's children after
 * the holder's create in any case, and the marker is among them (the creation of a parent, once per
 * path, costs a history read and one multi instead of one create).
 */
public final class LockParents {
    /** Where the library remembers which SEQUENCE lock paths it has created. */
    public static final String HISTORY_ROOT = "/fencing-lock-history";
    /** Name prefix of the marker child; it sorts after every lock node, so Curator never waits on it. */
    public static final String MARKER_PREFIX = "fencing-base-";

    private static final Logger LOG = LoggerFactory.getLogger(LockParents.class);
    private static final int CREATE_ATTEMPTS = 10;

    private LockParents() {}

    /**
     * The token base named by the marker among {@code children}, or empty if there is none (not this
     * library's parent). Several markers can only come from an operator's hand: the highest wins, since
     * a higher base can only make tokens rise.
     */
    public static OptionalLong base(List<String> children) {
        long base = -1;
        for (String child : children) {
            if (child.startsWith(MARKER_PREFIX)) {
                try {
                    long value = Long.parseLong(child.substring(MARKER_PREFIX.length()));
                    if (value >= 0) {
                        base = Math.max(base, value);
                    }
                } catch (NumberFormatException e) {
                    // a marker with an unreadable base is no marker: fail closed below
                }
            }
        }
        return base < 0 ? OptionalLong.empty() : OptionalLong.of(base);
    }

    /** The marker child name for {@code base}. */
    public static String marker(long base) {
        return MARKER_PREFIX + base;
    }

    /** The history node of lock parent {@code parent}. */
    public static String historyOf(String parent) {
        return HISTORY_ROOT + parent;
    }

    /**
     * Creates {@code parent}, its marker and (if missing) its history node, atomically; does nothing if
     * another client creates the parent meanwhile.
     */
    static void createSequenceParent(CuratorFramework client, String parent, List<ACL> acl) throws Exception {
        String history = historyOf(parent);
        ensureAncestors(client, parent, acl);
        ensureAncestors(client, history, acl);
        for (int attempt = 0; attempt < CREATE_ATTEMPTS; attempt++) {
            Stat previous = client.checkExists().forPath(history);
            long base;
            List<CuratorOp> ops = new ArrayList<>();
            if (previous == null) {
                base = 0;
                ops.add(createOp(client, acl, history));
            } else {
                Stat written;
                try {
                    written = markRecreation(client, history, previous.getVersion(), parent);
                } catch (KeeperException.BadVersionException | KeeperException.NoNodeException raced) {
                    continue;
                } catch (KeeperException.NodeExistsException made) {
                    return; // another contender made it first: just as good
                }
                base = written.getMzxid();
                ops.add(client.transactionOp()
                        .check()
                        .withVersion(written.getVersion())
                        .forPath(history));
            }
            ops.add(createOp(client, acl, parent));
            ops.add(createOp(client, acl, ZKPaths.makePath(parent, marker(base))));
            try {
                client.transaction().forOperations(ops);
                if (base == 0) {
                    LOG.info("created lock parent {} with its marker; its tokens are its sequence numbers", parent);
                } else {
                    LOG.warn(
                            "lock parent {} was deleted and is now created again; its tokens restart above"
                                    + " every token granted before, at base {}",
                            parent,
                            base);
                }
                return;
            } catch (KeeperException.NodeExistsException | KeeperException.BadVersionException e) {
                if (client.checkExists().forPath(parent) != null) {
                    return; // another contender made it first: just as good
                }
            } catch (KeeperException.NoNodeException e) {
                ensureAncestors(client, parent, acl);
                ensureAncestors(client, history, acl);
            }
        }
        throw new IllegalStateException("could not create lock parent " + parent + " in " + CREATE_ATTEMPTS
                + " attempts: other clients kept creating and deleting it");
    }

    /**
     * Writes the history node in the same transaction that checks the parent is absent (a create and a
     * delete of it), so the write's zxid comes after the deletion of every earlier incarnation. No other
     * library incarnation can appear before this client's creating transaction, which checks the
     * version written here: another creator would have had to write the history after this write.
     */
    private static Stat markRecreation(CuratorFramework client, String history, int version, String parent)
            throws Exception {
        List<CuratorTransactionResult> results = client.transaction()
                .forOperations(
                        client.transactionOp().setData().withVersion(version).forPath(history, new byte[0]),
                        client.transactionOp()
                                .create()
                                .withMode(CreateMode.PERSISTENT)
                                .forPath(parent),
                        client.transactionOp().delete().forPath(parent));
        return results.stream()
                .filter(result -> result.getType() == OperationType.SET_DATA)
                .findFirst()
                .orElseThrow()
                .getResultStat();
    }

    private static CuratorOp createOp(CuratorFramework client, List<ACL> acl, String path) throws Exception {
        var builder = client.transactionOp().create().withMode(CreateMode.PERSISTENT);
        return acl != null ? builder.withACL(acl).forPath(path) : builder.forPath(path);
    }

    private static void ensureAncestors(CuratorFramework client, String path, List<ACL> acl) throws Exception {
        String ancestors = ZKPaths.getPathAndNode(path).getPath();
        if ("/".equals(ancestors) || client.checkExists().forPath(ancestors) != null) {
            return;
        }
        try {
            var builder = client.create().creatingParentsIfNeeded().withMode(CreateMode.PERSISTENT);
            if (acl != null) {
                builder.withACL(acl, true).forPath(ancestors);
            } else {
                builder.forPath(ancestors);
            }
        } catch (KeeperException.NodeExistsException raced) {
            // made by another client meanwhile
        }
    }
}
