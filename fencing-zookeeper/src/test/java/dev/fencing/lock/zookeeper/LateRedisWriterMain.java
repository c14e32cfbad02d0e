package dev.fencing.lock.zookeeper;

import dev.fencing.FencePolicy;
import dev.fencing.lock.Lease;
import dev.fencing.redis.FencedRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * A lock holder in its own JVM, for {@link FrozenHolderRedisIT} to freeze with SIGSTOP between its lease
 * check and its write. Takes the lock, prints {@code HELD <token>}, then on each line of standard input:
 * {@code FENCED} writes {@code late-<token>} through the fence and prints {@code OUTCOME <outcome>};
 * {@code PLAIN} writes the same value with a plain SET and prints {@code PLAIN OK}. It never checks its
 * lease again: the pause falls between that check and the write. Arguments: ZooKeeper connect string, lock
 * path, session timeout in ms, Redis URI, key.
 */
public final class LateRedisWriterMain {
    private LateRedisWriterMain() {}

    public static void main(String[] args) throws Exception {
        String connect = args[0];
        String path = args[1];
        int sessionTimeoutMs = Integer.parseInt(args[2]);
        String redisUri = args[3];
        String key = args[4];
        RedisClient redisClient = RedisClient.create(redisUri);
        try (CuratorFramework client = CuratorFrameworkFactory.builder()
                        .connectString(connect)
                        .sessionTimeoutMs(sessionTimeoutMs)
                        .connectionTimeoutMs(sessionTimeoutMs)
                        .retryPolicy(new ExponentialBackoffRetry(50, 3, 500))
                        .build();
                StatefulRedisConnection<String, String> connection = redisClient.connect()) {
            client.start();
            if (!client.blockUntilConnected(20, TimeUnit.SECONDS)) {
                throw new IllegalStateException("could not connect to ZooKeeper at " + connect);
            }
            FencedRedis fenced =
                    FencedRedis.builder(connection).policy(FencePolicy.STRICT).build();
            Lease lease = FencedLocks.builder(client).build().lock(path).acquire();
            long token = lease.token();
            System.out.println("HELD " + token);
            System.out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                if (line.equals("FENCED")) {
                    System.out.println("OUTCOME " + fenced.trySet(key, "late-" + token, token));
                } else if (line.equals("PLAIN")) {
                    System.out.println("PLAIN " + connection.sync().set(key, "late-" + token));
                }
                System.out.flush();
            }
        } finally {
            redisClient.shutdown();
        }
    }
}
