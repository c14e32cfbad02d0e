package dev.fencing.lock.internal;

import dev.fencing.lock.TokenSource;
import java.util.List;
import java.util.OptionalLong;
import org.apache.curator.framework.CuratorFramework;
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
 */
final class TokenLockDriver extends StandardLockInternalsDriver {

    /** What one acquire attempt learned; written and read by the acquiring thread only. */
    static final class Attempt {
        long disruptionsBeforeCreate;
        String nodePath;
        long czxid;
        long ephemeralOwner;
        OptionalLong base = OptionalLong.empty();
    }

    private final ThreadLocal<Attempt> attempts = new ThreadLocal<>();
    private final LockRegistry registry;
    private final TokenSource source;

    TokenLockDriver(LockRegistry registry, TokenSource source) {
        this.registry = registry;
        this.source = source;
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
        Stat stat = new Stat();
        String ourPath;
        try {
            ourPath = create(client, path, lockNodeBytes, stat);
        } catch (KeeperException.NoNodeException e) {
            createParent(client, ZKPaths.getPathAndNode(path).getPath());
            ourPath = create(client, path, lockNodeBytes, stat);
        }
        attempt.nodePath = ourPath;
        attempt.czxid = stat.getCzxid();
        attempt.ephemeralOwner = stat.getEphemeralOwner();
        return ourPath;
    }

    @Override
    public PredicateResults getsTheLock(
            CuratorFramework client, List<String> children, String sequenceNodeName, int maxLeases) throws Exception {
        PredicateResults result = super.getsTheLock(client, children, sequenceNodeName, maxLeases);
        Attempt attempt = attempts.get();
        if (result.getsTheLock() && attempt != null) {
            // this listing was read after our create and holds our node, so it is of our node's parent
            attempt.base = LockParents.base(children);
        }
        return result;
    }

    private String create(CuratorFramework client, String path, byte[] bytes, Stat stat) throws Exception {
        var builder = client.create().storingStatIn(stat).withProtection().withMode(CreateMode.EPHEMERAL_SEQUENTIAL);
        var withAcl = registry.acl != null ? builder.withACL(registry.acl) : builder;
        return bytes != null ? withAcl.forPath(path, bytes) : withAcl.forPath(path);
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
