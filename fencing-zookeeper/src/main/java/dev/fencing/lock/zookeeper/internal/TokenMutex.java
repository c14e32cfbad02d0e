package dev.fencing.lock.zookeeper.internal;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;

/**
 * Curator's mutex with our driver, exposing the holder node's path that Curator keeps protected, and
 * storing {@code nodeData} in every lock node (a leader election's participant id, as Curator's {@code
 * LeaderSelector} does; null for locks).
 */
final class TokenMutex extends InterProcessMutex {
    private final byte[] nodeData;

    TokenMutex(CuratorFramework client, String path, TokenLockDriver driver, byte[] nodeData) {
        super(client, path, driver);
        this.nodeData = nodeData;
    }

    @Override
    protected byte[] getLockNodeBytes() {
        return nodeData;
    }

    String heldNodePath() {
        return getLockPath();
    }
}
