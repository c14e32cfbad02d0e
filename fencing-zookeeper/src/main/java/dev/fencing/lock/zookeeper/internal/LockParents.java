package dev.fencing.lock.zookeeper.internal;

import dev.fencing.lock.zookeeper.FenceTokenExhaustedException;
import dev.fencing.lock.zookeeper.ForeignLockParentException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Stat;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Makes and recognises the parents of {@link dev.fencing.lock.zookeeper.TokenSource#SEQUENCE} locks, so that a
 * sequence counter that restarted can never hand out a token below one granted before.
 *
 * <p>A SEQUENCE token is {@code base + sequence + 1}. The lock's parent is created together with (one
 * ZooKeeper multi) a PERSISTENT marker child {@code fencing-base-<base>} and a PERSISTENT history node
 * {@value #HISTORY_ROOT}{@code <absolute lock path>} whose data is the base, in decimal. The marker is
 * the parent's first child, so it takes sequence number 0 and the first lock node gets 1:
 *
 * <ul>
 *   <li>The first time a path is created, the history node does not exist yet, and the base is 0: the
 *       token is the holder node's sequence number + 1, the formula of the earlier fencing-zookeeper, so an
 *       earlier-version client and this one on the same base-0 parent never compute the same token for
 *       two different nodes ({@code sequence + 1} is the only formula with that property). The first
 *       grant of a fresh lock gets 2, since the marker took sequence 0.
 *   <li>The marker keeps the parent non-empty, so ZooKeeper's container reaper never deletes it (even if
 *       someone made it a CONTAINER) and a non-recursive {@code delete} fails with "not empty".
 *   <li>A parent without a marker is not this library's (a plain Curator lock's CONTAINER parent, a node
 *       made by hand or by an older version, or a marker deleted by hand): nothing is known about the
 *       tokens granted under it before, so the grant fails closed. A ZXID lock refuses a parent with a
 *       marker, for the same reason the other way round (its zxid tokens lie far above the sequence).
 *   <li>A path keeps the token source it was first used with, also across deletions of its parent:
 *       before its first grant on a path (in this process), a ZXID lock records {@value #ZXID_HISTORY}
 *       as the path's history if there is none, whether it created the CONTAINER parent or found one
 *       already there (a plain Curator lock's, which ZooKeeper reaps once empty); a SEQUENCE lock refuses
 *       to create a parent on a path whose history says {@value #ZXID_HISTORY} (its base would start far
 *       below the zxid tokens), and a ZXID lock refuses a path whose history names a SEQUENCE base (a
 *       re-created SEQUENCE parent's base can lie above the zxids).
 *   <li>A recursive delete ({@code deleteall}) removes parent and marker, but not the history node,
 *       which lives elsewhere. When the library finds the parent missing but the history present, it
 *       creates the parent in one multi that sets the history's data to {@code stored base + 2^31}
 *       ({@link #INCARNATION_SPAN}), checked against the history version it read, and creates the
 *       parent and its marker with that new base.
 * </ul>
 *
 * <p>Why no token of an earlier incarnation reaches the new one's: (1) Every incarnation of a parent
 * is created by a multi that creates the history node (only if absent, base 0) or sets its data with a
 * version check, so of two incarnations the later one read, and added {@code 2^31} to, a base at least
 * the earlier one's: bases rise by at least {@code 2^31} per incarnation, and a creator that read the
 * history before another incarnation appeared fails its check and reads again. (2) Within an
 * incarnation with base {@code b}, {@link SequenceTokens} issues a token only for a sequence {@code s}
 * with {@code 0 <= s <= 2^31 - 1 - margin}, so every token is at most {@code b + 2^31}, while the next
 * incarnation's tokens are at least {@code b + 2^31 + 1}. Nothing here depends on timing, on zxids, or on
 * how many transactions created the children.
 *
 * <p>The history is keyed by the absolute path, including the Curator namespace, and written through
 * the namespace-less client, so clients that name the same parent through different namespaces share
 * one history. A chroot in the connect string ({@code host:2181/app}) is invisible to the client: two
 * clients with different chroots keep two histories for one parent, and a recreation through the one
 * whose history is missing starts at base 0 again.
 *
 * <p>What is not covered: deleting the history node as well (a {@code deleteall} of {@value
 * #HISTORY_ROOT} or of {@code /}) makes the next creation look like the first one again, with base 0;
 * so does a history reached through a different chroot, or a marker made by hand (to adopt a foreign
 * parent, or to raise the base) without writing the same base to the history first; and a parent whose
 * sequence counter went through all 2^32 values (every lock-node create counts, refused ones too) would
 * start again at small positive numbers. {@link dev.fencing.lock.zookeeper.TokenSource#ZXID} has no such limits.
 *
 * <p>Alternatives considered: a base taken from the parent's own {@code czxid} on every creation keeps
 * the guarantee without a history node, but gives even a brand-new lock zxid-sized tokens, so the token
 * would no longer be the sequence number in the normal case; a base taken from the zxid of a history
 * write needs an argument that every sequence increment is a transaction of its own, which a multi
 * creating several children breaks; refusing to re-create a parent that existed before needs the same
 * history node to know that it existed, and leaves the lock dead until an operator steps in. Reading the
 * base costs nothing on the acquire path: Curator lists the parent's children after the holder's create
 * in any case, and the marker is among them (the creation of a parent, once per path, costs a history
 * read and one multi instead of one create).
 */
public final class LockParents {
    /** Where the library remembers which SEQUENCE lock paths it has created. */
    public static final String HISTORY_ROOT = "/fencing-lock-history";
    /** Name prefix of the marker child; it sorts after every lock node, so Curator never waits on it. */
    public static final String MARKER_PREFIX = "fencing-base-";

    private static final Logger LOG = LoggerFactory.getLogger(LockParents.class);
    /**
     * How far above the previous incarnation's base a re-created parent starts: {@code 2^31}, more than
     * any token the previous incarnation can grant above its base (see the class comment).
     */
    public static final long INCARNATION_SPAN = 1L << 31;

    /** The history data of a path first used by a ZXID lock. */
    public static final String ZXID_HISTORY = "zxid";

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

    /** The history node of lock parent {@code parent}, an absolute path (namespace included). */
    public static String historyOf(String parent) {
        return HISTORY_ROOT + parent;
    }

    /**
     * The base of the next incarnation of a parent whose history node holds {@code data} and was last
     * written at {@code mzxid}: the stored base plus {@value #INCARNATION_SPAN}. A history node with no
     * data was written by a build that took the base from the history write's zxid, so that base is at
     * most {@code mzxid}.
     *
     * @throws IllegalStateException if the data is not a non-negative decimal base: the tokens granted
     *     before are then unknown, so no parent is created
     * @throws FenceTokenExhaustedException if the next base would pass {@code Long.MAX_VALUE} (a base
     *     written by hand or restored corrupted): no higher base exists, so no parent is created
     */
    public static long nextBase(String lockPath, String history, byte[] data, long mzxid) {
        long stored;
        if (data == null || data.length == 0) {
            stored = mzxid;
        } else {
            String text = new String(data, StandardCharsets.US_ASCII);
            try {
                stored = Long.parseLong(text);
            } catch (NumberFormatException e) {
                stored = -1;
            }
            if (stored < 0) {
                throw new IllegalStateException("history node " + history + " holds '" + text + "', not a token"
                        + " base: the tokens granted under its lock parent before are unknown, so the parent is"
                        + " not created again. Write the highest token ever granted under it as the node's data");
            }
        }
        if (stored > Long.MAX_VALUE - INCARNATION_SPAN) {
            throw new FenceTokenExhaustedException(
                    "lock " + lockPath + " was deleted and its history node " + history + " holds token base "
                            + stored + ": the next base (+ 2^31) would pass Long.MAX_VALUE, so the parent is not"
                            + " created again and no token was issued. The history was written by hand or"
                            + " restored corrupted; move the lock to a new path (make sure its tokens start above"
                            + " every stored token) or use TokenSource.ZXID on a new path",
                    lockPath);
        }
        return stored + INCARNATION_SPAN;
    }

    /**
     * Creates {@code parent} (relative to {@code client}'s namespace), its marker and its history node
     * (or the history's next base), in one transaction; does nothing if another client creates the
     * parent meanwhile.
     */
    static void createSequenceParent(CuratorFramework client, String parent, List<ACL> acl) throws Exception {
        // The history is keyed by the absolute path, so every namespace that names this parent shares it.
        CuratorFramework root = client.usingNamespace(null);
        String absolute = ZKPaths.fixForNamespace(client.getNamespace(), parent);
        String history = historyOf(absolute);
        ensureAncestors(root, absolute, acl);
        ensureAncestors(root, history, acl);
        for (int attempt = 0; attempt < CREATE_ATTEMPTS; attempt++) {
            Stat stat = new Stat();
            byte[] data;
            try {
                data = root.getData().storingStatIn(stat).forPath(history);
            } catch (KeeperException.NoNodeException firstTime) {
                data = null;
            }
            if (isZxidHistory(data)) {
                throw new ForeignLockParentException(
                        "lock path " + absolute + " was used with TokenSource.ZXID (history node " + history
                                + "): a SEQUENCE token on it would be far below the zxid tokens granted before,"
                                + " so no parent was created and no token issued. Keep TokenSource.ZXID for this"
                                + " path, or move the SEQUENCE lock to a fresh path",
                        parent);
            }
            long base = data == null ? 0 : nextBase(parent, history, data, stat.getMzxid());
            byte[] stored = Long.toString(base).getBytes(StandardCharsets.US_ASCII);
            List<CuratorOp> ops = new ArrayList<>();
            // The history write and the parent's creation succeed or fail together, and the version check
            // lets only one creator build on the base it read: incarnations take bases in history order.
            ops.add(
                    data == null
                            ? createOp(root, acl, history, stored)
                            : root.transactionOp()
                                    .setData()
                                    .withVersion(stat.getVersion())
                                    .forPath(history, stored));
            ops.add(createOp(root, acl, absolute, new byte[0]));
            ops.add(createOp(root, acl, ZKPaths.makePath(absolute, marker(base)), new byte[0]));
            try {
                root.transaction().forOperations(ops);
                if (base == 0) {
                    LOG.info(
                            "created lock parent {} with its marker; its tokens are its sequence numbers + 1",
                            absolute);
                } else {
                    LOG.warn(
                            "lock parent {} was deleted and is now created again; its tokens restart above"
                                    + " every token granted before, at base {}",
                            absolute,
                            base);
                }
                return;
            } catch (KeeperException.NodeExistsException | KeeperException.BadVersionException e) {
                if (root.checkExists().forPath(absolute) != null) {
                    return; // another contender made it first: just as good
                }
            } catch (KeeperException.NoNodeException e) {
                ensureAncestors(root, absolute, acl);
                ensureAncestors(root, history, acl);
            }
        }
        throw new IllegalStateException("could not create lock parent " + absolute + " in " + CREATE_ATTEMPTS
                + " attempts: other clients kept creating and deleting it");
    }

    /**
     * Creates the CONTAINER parent of a ZXID lock, after {@link #recordZxidHistory} (a re-created
     * SEQUENCE parent's base may lie above the zxids, so a ZXID token after it could go backwards).
     */
    static void createZxidParent(CuratorFramework client, String parent, List<ACL> acl) throws Exception {
        recordZxidHistory(client, parent, acl);
        try {
            var builder = client.create().creatingParentContainersIfNeeded().withMode(CreateMode.CONTAINER);
            if (acl != null) {
                builder.withACL(acl, true).forPath(parent);
            } else {
                builder.forPath(parent);
            }
            LOG.debug(
                    "created CONTAINER lock parent {} for ZXID tokens",
                    ZKPaths.fixForNamespace(client.getNamespace(), parent));
        } catch (KeeperException.NodeExistsException raced) {
            // another contender created it first: just as good
        }
    }

    /**
     * Makes sure the history of lock parent {@code parent} (relative to {@code client}'s namespace)
     * says {@value #ZXID_HISTORY}, creating it if missing, so that a SEQUENCE lock never creates a parent
     * on the path later: its tokens would start far below the zxid tokens granted here. Needed for every
     * parent a ZXID lock is granted under, not only those it creates: a parent that was already there
     * (a plain Curator lock's CONTAINER, a node made by hand) may be reaped or deleted afterwards too.
     *
     * @throws ForeignLockParentException if the history names a SEQUENCE base: that path's re-created
     *     SEQUENCE parents may have granted tokens above the zxids
     */
    static void recordZxidHistory(CuratorFramework client, String parent, List<ACL> acl) throws Exception {
        CuratorFramework root = client.usingNamespace(null);
        String absolute = ZKPaths.fixForNamespace(client.getNamespace(), parent);
        String history = historyOf(absolute);
        byte[] data;
        try {
            data = root.getData().forPath(history);
        } catch (KeeperException.NoNodeException firstTime) {
            ensureAncestors(root, history, acl);
            try {
                var builder = root.create().withMode(CreateMode.PERSISTENT);
                byte[] zxid = ZXID_HISTORY.getBytes(StandardCharsets.US_ASCII);
                if (acl != null) {
                    builder.withACL(acl).forPath(history, zxid);
                } else {
                    builder.forPath(history, zxid);
                }
                data = zxid;
                LOG.info("recorded {} as the history of ZXID lock parent {}", ZXID_HISTORY, absolute);
            } catch (KeeperException.NodeExistsException raced) {
                data = root.getData().forPath(history);
            }
        }
        if (!isZxidHistory(data)) {
            throw new ForeignLockParentException(
                    "lock path " + absolute + " was used with TokenSource.SEQUENCE (history node " + history
                            + "): its parent was deleted or lost its marker, and a re-created SEQUENCE parent's"
                            + " tokens may lie above zxid tokens, so no token was issued. Keep"
                            + " TokenSource.SEQUENCE for this path, or move the ZXID lock to a fresh path",
                    parent);
        }
    }

    private static boolean isZxidHistory(byte[] data) {
        return data != null && ZXID_HISTORY.equals(new String(data, StandardCharsets.US_ASCII));
    }

    /**
     * {@value #HISTORY_ROOT} is shared by every application on the ensemble, whatever its credentials:
     * whoever creates it first gives it an ACL that lets anyone see it and add histories to it, and lets
     * nobody (but a super user) delete what lies directly under it. Made with the creator's ACL alone,
     * it would lock every application with other credentials out of SEQUENCE locks for good.
     */
    private static void createHistoryRoot(CuratorFramework client, List<ACL> acl) throws Exception {
        try {
            client.create()
                    .withMode(CreateMode.PERSISTENT)
                    .withACL(historyRootAcl(acl))
                    .forPath(HISTORY_ROOT, new byte[0]);
        } catch (KeeperException.NodeExistsException raced) {
            // made by another client meanwhile
        }
    }

    static List<ACL> historyRootAcl(List<ACL> acl) {
        int anyone = ZooDefs.Perms.READ | ZooDefs.Perms.CREATE;
        List<ACL> result = new ArrayList<>();
        for (ACL entry : acl) {
            if (entry.getId().equals(ZooDefs.Ids.ANYONE_ID_UNSAFE)) {
                anyone |= entry.getPerms() & ~ZooDefs.Perms.DELETE;
            } else {
                result.add(new ACL(entry.getPerms() & ~ZooDefs.Perms.DELETE, entry.getId()));
            }
        }
        result.add(new ACL(anyone, ZooDefs.Ids.ANYONE_ID_UNSAFE));
        return result;
    }

    private static CuratorOp createOp(CuratorFramework client, List<ACL> acl, String path, byte[] data)
            throws Exception {
        var builder = client.transactionOp().create().withMode(CreateMode.PERSISTENT);
        return acl != null ? builder.withACL(acl).forPath(path, data) : builder.forPath(path, data);
    }

    private static void ensureAncestors(CuratorFramework client, String path, List<ACL> acl) throws Exception {
        String ancestors = ZKPaths.getPathAndNode(path).getPath();
        if ("/".equals(ancestors) || client.checkExists().forPath(ancestors) != null) {
            return;
        }
        if (acl != null && path.startsWith(HISTORY_ROOT + "/")) {
            createHistoryRoot(client, acl);
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
