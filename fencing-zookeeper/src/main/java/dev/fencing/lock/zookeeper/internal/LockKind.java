package dev.fencing.lock.zookeeper.internal;

import java.util.List;
import org.apache.curator.framework.recipes.locks.StandardLockInternalsDriver;

/**
 * The three kinds of lock node a path can hold, named as Curator names them: the exclusive lock's
 * {@code lock-} nodes ({@code InterProcessMutex}, also leader election, as in Curator's {@code
 * LeaderSelector}) and the read/write lock's {@code __READ__} and {@code __WRIT__} nodes ({@code
 * InterProcessReadWriteLock}; both names are 8 characters, so their sequence suffixes sort together). A
 * path holds nodes of one recipe only: the two sort their children differently, and mixed, each would
 * grant the lock while the other's holder still has it.
 */
enum LockKind {
    EXCLUSIVE("lock-"),
    READ("__READ__"),
    WRITE("__WRIT__");

    private static final String READ_NAME = "__READ__";
    private static final String WRITE_NAME = "__WRIT__";

    /** The node name before the sequence suffix. */
    final String nodeName;

    LockKind(String nodeName) {
        this.nodeName = nodeName;
    }

    boolean readWrite() {
        return this != EXCLUSIVE;
    }

    /**
     * The part of {@code child} that orders it among its siblings: the sequence suffix of a node of this
     * recipe; a child without one (the parent's marker) keeps its whole name and sorts after every node.
     */
    String sortKey(String child) {
        if (this == EXCLUSIVE) {
            return StandardLockInternalsDriver.standardFixForSorting(child, nodeName);
        }
        return StandardLockInternalsDriver.standardFixForSorting(
                StandardLockInternalsDriver.standardFixForSorting(child, READ_NAME), WRITE_NAME);
    }

    /** A child among {@code children} made by the other recipe, or null if there is none. */
    String foreignChild(List<String> children) {
        for (String child : children) {
            boolean readWriteNode = child.contains(READ_NAME) || child.contains(WRITE_NAME);
            boolean exclusiveNode = !readWriteNode && child.contains(EXCLUSIVE.nodeName);
            if (readWrite() ? exclusiveNode : readWriteNode) {
                return child;
            }
        }
        return null;
    }

    static boolean isWriteNode(String child) {
        return child.contains(WRITE_NAME);
    }
}
