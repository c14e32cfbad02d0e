package dev.fencing.lock.zookeeper;

import dev.fencing.internal.Text;
import java.nio.charset.StandardCharsets;
import java.security.NoSuchAlgorithmException;
import java.util.List;
import java.util.Objects;
import org.apache.curator.framework.AuthInfo;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.apache.zookeeper.server.auth.DigestAuthenticationProvider;

/**
 * Digest credentials for lock nodes: give {@link #authInfo()} to the Curator client and {@link
 * #acl()} to {@link FencedLocks.Builder#acl(List)}, and a client without these credentials can
 * neither create, read nor delete the lock's nodes.
 *
 * <pre>{@code
 * ZooKeeperDigest digest = ZooKeeperDigest.of("orders", secret);
 * CuratorFramework client = CuratorFrameworkFactory.builder()
 *         .connectString(zk).retryPolicy(retry)
 *         .authorization(List.of(digest.authInfo()))
 *         .build();
 * FencedLocks locks = FencedLocks.builder(client).acl(digest.acl()).build();
 * }</pre>
 *
 * Immutable. {@link #toString()} never shows the password.
 */
public final class ZooKeeperDigest {
    private final String user;
    private final String password;

    private ZooKeeperDigest(String user, String password) {
        this.user = user;
        this.password = password;
    }

    public static ZooKeeperDigest of(String user, String password) {
        Objects.requireNonNull(user, "user");
        Objects.requireNonNull(password, "password");
        if (user.isEmpty() || user.contains(":")) {
            throw new IllegalArgumentException(
                    "digest user must be non-empty and contain no ':', got '" + Text.withoutControls(user) + "'");
        }
        if (password.isEmpty()) {
            throw new IllegalArgumentException(
                    "digest password for user '" + Text.withoutControls(user) + "' must not be empty");
        }
        return new ZooKeeperDigest(user, password);
    }

    /** What the Curator client sends to authenticate ({@code CuratorFrameworkFactory.Builder#authorization}). */
    public AuthInfo authInfo() {
        return new AuthInfo("digest", (user + ":" + password).getBytes(StandardCharsets.UTF_8));
    }

    /** All permissions for this user, none for anyone else. */
    public List<ACL> acl() {
        try {
            String digest = DigestAuthenticationProvider.generateDigest(user + ":" + password);
            return List.of(new ACL(ZooDefs.Perms.ALL, new Id("digest", digest)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("this JVM has no SHA-1 for ZooKeeper digests", e);
        }
    }

    @Override
    public String toString() {
        return "ZooKeeperDigest[user=" + user + "]";
    }
}
