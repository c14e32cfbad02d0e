package dev.fencing.lock.zookeeper.internal;

import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.LeaseLostException;
import dev.fencing.lock.zookeeper.ForeignLockParentException;
import dev.fencing.lock.zookeeper.TokenSource;
import java.util.List;
import java.util.OptionalLong;
import java.util.UUID;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.curator.framework.recipes.locks.PredicateResults;
import org.apache.curator.framework.recipes.locks.StandardLockInternalsDriver;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

/**
 * Creates lock nodes the way the standard driver does (ephemeral sequential, GUID-protected), and on
 * the way records, for the acquiring thread, what the grant needs without an extra round trip: the
 * count of connection disruptions seen before the create, the create's Stat (czxid and the owning
 * session), and the token base named by the parent's marker among the children Curator lists anyway.
 * A missing parent is created the way its token source needs (see {@link LockParents}): SEQUENCE
 * parents with their marker and history, ZXID parents as CONTAINERs that ZooKeeper may reap when unused,
 * after recording in the history that the path is a ZXID lock's (a parent that is already there gets
 * that record at the grant, see {@link PathLock}).
 *
 * <p>For the read/write lock it names and orders nodes as Curator's {@code InterProcessReadWriteLock}
 * does, with Curator's predicates: a writer waits for every node before its own, a reader only for
 * writers before it, and a thread that holds the write lock gets the read lock at once, with a node that
 * takes the write node's place in the order (Curator 5.9's downgrade), so a writer queued behind the
 * write node also waits for the downgraded reader. Unlike Curator, the downgraded node is made only
 * while the write node exists (see {@link #createDowngraded}).
 */
final class TokenLockDriver extends StandardLockInternalsDriver {

    /** What one acquire attempt learned; written and read by the acquiring thread only. */
    static final class Attempt {
        long disruptionsBeforeCreate;
        long generationBeforeCreate;
        String nodePath;
        long czxid;
        long ephemeralOwner;
        OptionalLong base = OptionalLong.empty();
        /** A read grant to a thread that holds the write lock: the write hold whose place it takes. */
        Hold downgradedFrom;
    }

    private final ThreadLocal<Attempt> attempts = new ThreadLocal<>();
    private final LockRegistry registry;
    private final TokenSource source;
    private final LockKind kind;
    private final String lockPath;

    TokenLockDriver(LockRegistry registry, TokenSource source, LockKind kind, String lockPath) {
        this.registry = registry;
        this.source = source;
        this.kind = kind;
        this.lockPath = lockPath;
    }

    Attempt begin() {
        Attempt attempt = new Attempt();
        attempts.set(attempt);
        return attempt;
    }

    void end() {
        attempts.remove();
    }

    @Override
    public String createsTheLock(CuratorFramework client, String path, byte[] lockNodeBytes) throws Exception {
        Attempt attempt = attempts.get();
        // Read before the create: any SUSPENDED, LOST or pause from here to the registration of the hold
        // changes the count, and the grant then comes out invalid.
        attempt.disruptionsBeforeCreate = registry.disruptions();
        // Likewise Curator's handle: a handle replaced after this read closed the session the node may have.
        attempt.generationBeforeCreate = registry.handleGeneration();
        String parent = ZKPaths.getPathAndNode(path).getPath();
        attempt.downgradedFrom = kind == LockKind.READ ? registry.writeHoldOfCurrentThread(lockPath) : null;
        Stat stat = new Stat();
        String ourPath;
        if (attempt.downgradedFrom != null) {
            ourPath = createDowngraded(client, parent, attempt.downgradedFrom, lockNodeBytes);
        } else {
            String nodePath = ZKPaths.makePath(parent, kind.nodeName);
            try {
                ourPath = create(client, nodePath, lockNodeBytes, stat);
            } catch (KeeperException.NoNodeException e) {
                createParent(client, parent);
                ourPath = create(client, nodePath, lockNodeBytes, stat);
            }
        }
        attempt.nodePath = ourPath;
        attempt.czxid = stat.getCzxid();
        attempt.ephemeralOwner = stat.getEphemeralOwner();
        return ourPath;
    }

    @Override
    public PredicateResults getsTheLock(
            CuratorFramework client, List<String> children, String sequenceNodeName, int maxLeases) throws Exception {
        String foreign = kind.foreignChild(children);
        if (foreign != null) {
            throw new ForeignLockParentException(
                    "lock path " + lockPath + " holds node " + foreign + " of the other lock recipe ("
                            + (kind.readWrite() ? "an exclusive lock or leader election" : "a read/write lock")
                            + "): the two order their nodes differently and could both grant the lock at once,"
                            + " so no token was issued. Use one recipe per path",
                    lockPath);
        }
        Attempt attempt = attempts.get();
        PredicateResults result =
                switch (kind) {
                    case EXCLUSIVE -> super.getsTheLock(client, children, sequenceNodeName, maxLeases);
                    case WRITE -> super.getsTheLock(client, children, sequenceNodeName, 1);
                    case READ ->
                        attempt != null && attempt.downgradedFrom != null
                                ? new PredicateResults(null, true)
                                : readerGetsTheLock(children, sequenceNodeName);
                };
        if (result.getsTheLock() && attempt != null) {
            // this listing was read after our create and holds our node, so it is of our node's parent
            attempt.base = LockParents.base(children);
            registry.whenNodeGranted();
        }
        return result;
    }

    @Override
    public String fixForSorting(String str, String lockName) {
        return kind.sortKey(str);
    }

    /** Curator's read predicate: a reader waits only for a writer before it, and watches the first one. */
    private static PredicateResults readerGetsTheLock(List<String> children, String sequenceNodeName)
            throws KeeperException {
        int firstWrite = -1;
        for (int index = 0; index < children.size(); index++) {
            String child = children.get(index);
            if (child.startsWith(sequenceNodeName)) {
                return new PredicateResults(firstWrite < 0 ? null : children.get(firstWrite), firstWrite < 0);
            }
            if (firstWrite < 0 && LockKind.isWriteNode(child)) {
                firstWrite = index;
            }
        }
        throw new KeeperException.NoNodeException("Sequential path not found: " + sequenceNodeName);
    }

    private String create(CuratorFramework client, String path, byte[] bytes, Stat stat) throws Exception {
        var builder = client.create().storingStatIn(stat).withProtection().withMode(CreateMode.EPHEMERAL_SEQUENTIAL);
        var withAcl = registry.acl != null ? builder.withACL(registry.acl) : builder;
        return bytes != null ? withAcl.forPath(path, bytes) : withAcl.forPath(path);
    }

    /**
     * The read node of a downgrade: EPHEMERAL, named with the write node's sequence so that it sorts in the
     * write node's place, and created in one transaction with a check that the write node still exists. A
     * write node that is gone (the session ended, someone deleted it) may already have let another writer
     * in, so no read is granted in its place: {@link LeaseLostException}. The name carries a GUID, as
     * Curator's protected names do, so a transaction retried after a lost reply recognises its own node.
     */
    private String createDowngraded(CuratorFramework client, String parent, Hold write, byte[] bytes) throws Exception {
        String node = ZKPaths.makePath(
                parent,
                "_c_" + UUID.randomUUID() + "-" + kind.nodeName
                        + kind.sortKey(ZKPaths.getNodeFromPath(write.nodePath)));
        var create = client.transactionOp().create().withMode(CreateMode.EPHEMERAL);
        var withAcl = registry.acl != null ? create.withACL(registry.acl) : create;
        CuratorOp createOp = withAcl.forPath(node, bytes != null ? bytes : new byte[0]);
        CuratorOp checkOp = client.transactionOp().check().forPath(write.nodePath);
        boolean created = false;
        try {
            try {
                client.transaction().forOperations(checkOp, createOp);
            } catch (KeeperException.NodeExistsException retried) {
                Stat stat = client.checkExists().forPath(node);
                long session = client.getZookeeperClient().getZooKeeper().getSessionId();
                if (stat == null || stat.getEphemeralOwner() != session) {
                    throw retried;
                }
            } catch (KeeperException.NoNodeException writeNodeGone) {
                registry.lostLater(write, LeaseLoss.NODE_GONE);
                throw new LeaseLostException(lockPath, write.token, LeaseLoss.NODE_GONE);
            }
            created = true;
            return node;
        } finally {
            if (!created) {
                // Whatever failed (an interrupt while waiting for the reply, a lost connection, a timeout, or a
                // retry that found the write node gone after an earlier try was applied and its reply lost),
                // the transaction may have created the read node all the same, in the write node's place and
                // unknown to Curator, where it would hold every writer back until the session ends. Its name is
                // this attempt's own (a fresh UUID): delete it in the background, until done (a node that is
                // not there is done).
                deleteQuietly(client, node);
            }
        }
    }

    private static void deleteQuietly(CuratorFramework client, String node) {
        try {
            client.delete().guaranteed().inBackground().forPath(node);
        } catch (Exception e) {
            // a closed client: the node goes with its session; the failure being thrown is the one to report
        }
    }

    private void createParent(CuratorFramework client, String parent) throws Exception {
        if (source == TokenSource.SEQUENCE) {
            LockParents.createSequenceParent(client, parent, registry.acl);
        } else {
            LockParents.createZxidParent(client, parent, registry.acl);
            registry.zxidHistoryRecorded(parent);
        }
    }
}
