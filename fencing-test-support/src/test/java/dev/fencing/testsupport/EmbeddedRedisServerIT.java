package dev.fencing.testsupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class EmbeddedRedisServerIT {

    @Test
    void anAppendOnlyServerKeepsAcknowledgedWritesAcrossAKill() {
        try (EmbeddedRedisServer redis = EmbeddedRedisServer.builder()
                .appendOnly(EmbeddedRedisServer.AppendFsync.ALWAYS)
                .build()) {
            assertThat(command(redis.port(), "SET", "k", "v1")).isEqualTo("+OK");
            int port = redis.port();

            redis.kill();
            assertThat(redis.isRunning()).isFalse();
            redis.start();

            assertThat(redis.port()).isEqualTo(port);
            assertThat(command(redis.port(), "GET", "k")).isEqualTo("v1");
        }
    }

    @Test
    void aServerWithoutPersistenceStartsEmptyAfterARestart() {
        try (EmbeddedRedisServer redis = EmbeddedRedisServer.builder().build()) {
            assertThat(command(redis.port(), "SET", "k", "v1")).isEqualTo("+OK");

            redis.stop();
            redis.start();

            assertThat(command(redis.port(), "GET", "k")).isEqualTo("(nil)");
        }
    }

    @Test
    void twoServersGetPortsOfTheirOwnAndCloseIsSafeTwice() {
        EmbeddedRedisServer first = EmbeddedRedisServer.builder().build();
        try (EmbeddedRedisServer second = EmbeddedRedisServer.builder().build()) {
            assertThat(first.port()).isNotEqualTo(second.port());
            assertThat(second.uri()).isEqualTo("redis://127.0.0.1:" + second.port());
            assertThat(command(second.port(), "PING")).isEqualTo("+PONG");
        } finally {
            first.close();
            first.close();
        }
        assertThat(first.isRunning()).isFalse();
        assertThat(first.directory()).doesNotExist();
        assertThatThrownBy(first::start)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
    }

    @Test
    void aBadDirectiveIsRefusedNamingIt() {
        assertThatThrownBy(() -> EmbeddedRedisServer.builder().setting("port", "1"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'port'");
        assertThatThrownBy(() -> EmbeddedRedisServer.builder().setting("maxmemory", "1mb\nport 1"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("one line");
    }

    /** One command over RESP; a bulk reply as its text, a missing one as {@code (nil)}, others as sent. */
    private static String command(int port, String... words) {
        try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), port)) {
            StringBuilder request = new StringBuilder("*").append(words.length).append("\r\n");
            for (String word : words) {
                request.append('$')
                        .append(word.getBytes(StandardCharsets.UTF_8).length)
                        .append("\r\n");
                request.append(word).append("\r\n");
            }
            OutputStream out = socket.getOutputStream();
            out.write(request.toString().getBytes(StandardCharsets.UTF_8));
            out.flush();
            BufferedReader in =
                    new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
            String first = in.readLine();
            if (first.startsWith("$-1")) {
                return "(nil)";
            }
            return first.startsWith("$") ? in.readLine() : first;
        } catch (IOException e) {
            throw new AssertionError("Redis on port " + port + " did not answer " + String.join(" ", words), e);
        }
    }
}
