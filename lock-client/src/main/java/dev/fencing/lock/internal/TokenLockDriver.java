package dev.fencing.lock.internal;

import java.util.List;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.StandardLockInternalsDriver;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Stat;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Creates lock nodes the way the standard driver does (ephemeral sequential, GUID-protected), with two
 * changes: a missing lock parent is created PERSISTENT, never as a CONTAINER that ZooKeeper would reap
 * and restart at sequence 0; and the create returns the node's Stat, so the czxid token costs no
 * extra round trip.
 */
final class TokenLockDriver extends StandardLockInternalsDriver {
    private static final Logger log = LoggerFactory.getLogger(TokenLockDriver.class);

    /** Filled by the acquiring thread's create, read by the same thread right after it gets the lock. */
    record Created(String nodePath, long czxid) {}

    private final ThreadLocal<Created> lastCreated = new ThreadLocal<>();
    private final List<ACL> acl;

    TokenLockDriver(List<ACL> acl) {
        this.acl = acl;
    }

    @Override
    public String createsTheLock(CuratorFramework client, String path, byte[] lockNodeBytes) throws Exception {
        Stat stat = new Stat();
        String ourPath;
        try {
            ourPath = create(client, path, lockNodeBytes, stat);
        } catch (KeeperException.NoNodeException e) {
            String parent = ZKPaths.getPathAndNode(path).getPath();
            createParent(client, parent);
            ourPath = create(client, path, lockNodeBytes, stat);
        }
        lastCreated.set(new Created(ourPath, stat.getCzxid()));
        return ourPath;
    }

    /** The czxid of {@code nodePath} if this thread's last create made it, else 0. */
    long takeCzxid(String nodePath) {
        Created created = lastCreated.get();
        lastCreated.remove();
        return created != null && created.nodePath().equals(nodePath) ? created.czxid() : 0;
    }

    private String create(CuratorFramework client, String path, byte[] bytes, Stat stat) throws Exception {
        var builder = client.create().storingStatIn(stat).withProtection().withMode(CreateMode.EPHEMERAL_SEQUENTIAL);
        var withAcl = acl != null ? builder.withACL(acl) : builder;
        return bytes != null ? withAcl.forPath(path, bytes) : withAcl.forPath(path);
    }

    void createParent(CuratorFramework client, String parent) throws Exception {
        try {
            var builder = client.create().creatingParentsIfNeeded().withMode(CreateMode.PERSISTENT);
            if (acl != null) {
                builder.withACL(acl, true).forPath(parent);
            } else {
                builder.forPath(parent);
            }
            log.info("created PERSISTENT lock parent {}", parent);
        } catch (KeeperException.NodeExistsException raced) {
            // another contender created it first: just as good
        }
    }
}
