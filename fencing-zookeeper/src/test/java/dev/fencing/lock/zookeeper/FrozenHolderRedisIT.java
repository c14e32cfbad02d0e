package dev.fencing.lock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.FencePolicy;
import dev.fencing.lock.FencedLock;
import dev.fencing.lock.Lease;
import dev.fencing.redis.FencedRedis;
import dev.fencing.redis.WriteOutcome;
import dev.fencing.testsupport.EmbeddedZooKeeper;
import dev.fencing.testsupport.ProcessFreezer;
import dev.fencing.testsupport.RedisServers;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.junit.jupiter.api.Test;

/**
 * The whole story with real processes: a fencing-zookeeper holder in a JVM of its own is frozen (SIGSTOP) past its
 * ZooKeeper session while it holds its token; the next holder takes the lock with a greater token and writes
 * Redis; the frozen JVM resumes and writes under its old token. Redis refuses that write with the stored
 * token, and the same late write sent as a plain SET overwrites the newer holder's value.
 */
class FrozenHolderRedisIT {
    private static final int SESSION_TIMEOUT_MS = 2_000;

    @Test
    void aHolderFrozenPastItsSessionIsRefusedByRedisWhileItsPlainSetOverwritesTheNewerValue() throws Exception {
        String path = "/it/redis-frozen-holder";
        String uri = RedisServers.shared().uri();
        RedisClient redisClient = RedisClient.create(uri);
        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder().build();
                StatefulRedisConnection<String, String> connection = redisClient.connect()) {
            RedisCommands<String, String> plain = connection.sync();
            String key = "{frozen-holder-" + System.nanoTime() + "}";
            Process holder = start(zk.connectString(), path, uri, key);
            try {
                BlockingQueue<String> lines = lines(holder);
                String held = lines.poll(60, TimeUnit.SECONDS);
                assertThat(held).as("the holder's first line").startsWith("HELD ");
                long frozenToken = Long.parseLong(held.substring("HELD ".length()));

                long newerToken;
                try (ProcessFreezer.Frozen frozen = ProcessFreezer.freeze(holder.pid(), Duration.ofSeconds(60));
                        CuratorFramework client = newClient(zk.connectString())) {
                    FencedLock lock = FencedLocks.builder(client).build().lock(path);
                    // granted only once the frozen holder's session has expired and its node is gone
                    try (Lease successor =
                            lock.tryAcquire(Duration.ofSeconds(30)).orElseThrow()) {
                        newerToken = successor.token();
                        assertThat(newerToken).isGreaterThan(frozenToken);
                        FencedRedis fenced = FencedRedis.builder(connection)
                                .policy(FencePolicy.STRICT)
                                .build();
                        assertThat(fenced.trySet(key, "by-" + newerToken, newerToken)
                                        .isApplied())
                                .isTrue();
                    }
                }

                send(holder, "FENCED");
                assertThat(lines.poll(30, TimeUnit.SECONDS))
                        .isEqualTo("OUTCOME " + new WriteOutcome.Rejected(newerToken, frozenToken));
                assertThat(plain.get(key)).isEqualTo("by-" + newerToken);

                send(holder, "PLAIN");
                assertThat(lines.poll(30, TimeUnit.SECONDS)).isEqualTo("PLAIN OK");
                assertThat(plain.get(key)).isEqualTo("late-" + frozenToken);
            } finally {
                ProcessFreezer.resume(holder.pid());
                holder.destroyForcibly();
                holder.waitFor(10, TimeUnit.SECONDS);
            }
        } finally {
            redisClient.shutdown();
        }
    }

    private static CuratorFramework newClient(String connect) throws InterruptedException {
        CuratorFramework client =
                CuratorFrameworkFactory.newClient(connect, 10_000, 10_000, new ExponentialBackoffRetry(50, 3, 500));
        client.start();
        client.blockUntilConnected(20, TimeUnit.SECONDS);
        return client;
    }

    private static Process start(String connect, String path, String redisUri, String key) throws IOException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        File log = Path.of("target", "LateRedisWriterMain-" + System.nanoTime() + ".log")
                .toFile();
        return new ProcessBuilder(List.of(
                        java,
                        "-cp",
                        System.getProperty("java.class.path"),
                        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                        LateRedisWriterMain.class.getName(),
                        connect,
                        path,
                        Integer.toString(SESSION_TIMEOUT_MS),
                        redisUri,
                        key))
                .redirectError(ProcessBuilder.Redirect.to(log))
                .start();
    }

    private static void send(Process process, String line) throws IOException {
        OutputStream out = process.getOutputStream();
        out.write((line + "\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    private static BlockingQueue<String> lines(Process process) {
        BlockingQueue<String> lines = new LinkedBlockingQueue<>();
        Thread reader = new Thread(() -> {
            try (BufferedReader in =
                    new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line = in.readLine(); line != null; line = in.readLine()) {
                    lines.add(line);
                }
            } catch (IOException ignored) {
                // the child ended
            }
        });
        reader.setDaemon(true);
        reader.start();
        return lines;
    }
}
