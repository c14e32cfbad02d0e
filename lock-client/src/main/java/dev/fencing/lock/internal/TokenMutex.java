package dev.fencing.lock.internal;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;

/** Curator's mutex with our driver, exposing the holder node's path that Curator keeps protected. */
final class TokenMutex extends InterProcessMutex {
    TokenMutex(CuratorFramework client, String path, TokenLockDriver driver) {
        super(client, path, driver);
    }

    String heldNodePath() {
        return getLockPath();
    }
}
