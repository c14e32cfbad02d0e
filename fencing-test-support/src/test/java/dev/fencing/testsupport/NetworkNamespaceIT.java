package dev.fencing.testsupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Needs root and iproute2; where they are missing, it checks that the reason is given in one sentence (the
 * machines CI runs on are root).
 */
class NetworkNamespaceIT {

    @Test
    void aCutAddressIsUnreachableFromTheNamespaceWhileTheOtherHostAddressStaysReachable()
            throws IOException, InterruptedException {
        if (!namespacesAvailable()) {
            return;
        }
        String net = NetworkNamespace.freeSubnet();
        try (NetworkNamespace client = NetworkNamespace.builder(NetworkNamespace.ownedName("tsn", "c1"))
                        .link(net + ".1", net + ".2", 30)
                        .link(net + ".5", net + ".6", 30)
                        .build();
                ServerSocket zookeeperSide = new ServerSocket(0, 50, InetAddress.getByName(net + ".1"));
                ServerSocket dataSide = new ServerSocket(0, 50, InetAddress.getByName(net + ".5"))) {
            assertThat(connects(client, net + ".1", zookeeperSide.getLocalPort()))
                    .isTrue();

            // when
            client.cut(net + ".1");

            // then
            assertThat(connects(client, net + ".1", zookeeperSide.getLocalPort()))
                    .isFalse();
            assertThat(connects(client, net + ".5", dataSide.getLocalPort())).isTrue();
            client.heal(net + ".1");
            assertThat(connects(client, net + ".1", zookeeperSide.getLocalPort()))
                    .isTrue();
        }
        assertThat(NetworkNamespace.removeAbandoned("tsn")).isEmpty();
        assertThat(run("ip", "netns", "list")).doesNotContain(NetworkNamespace.ownedName("tsn", "c1"));
    }

    @Test
    void aNamespaceThatCutsBothWaysHearsNothingMoreFromACutAddressWhileAOneWayCutStillDeliversIt()
            throws IOException, InterruptedException {
        if (!namespacesAvailable()) {
            return;
        }
        String net = NetworkNamespace.freeSubnet();
        assertThat(hearsTheServerAfterTheCut(net, "c2", false))
                .as("a blackhole route holds back only what the namespace sends")
                .isTrue();
        assertThat(hearsTheServerAfterTheCut(net, "c3", true)).isFalse();
    }

    @Test
    void namesThatCannotBeInterfaceNamesAreRefused() {
        assertThatThrownBy(() -> NetworkNamespace.builder("this-name-is-far-too-long"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("this-name-is-far-too-long");
        assertThatThrownBy(() -> NetworkNamespace.ownedName("X", "c1"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'X'");
    }

    /** Whether namespaces can be made here; where not, the reason must be one sentence. Removes leftovers. */
    private static boolean namespacesAvailable() {
        Optional<String> unavailable = NetworkNamespace.unavailableReason();
        if (unavailable.isPresent()) {
            assertThat(unavailable.get()).doesNotContain("\n").isNotBlank();
            return false;
        }
        NetworkNamespace.removeAbandoned("tsn");
        return true;
    }

    /**
     * In a namespace of its own (cutting both ways or not), connects to a server on the host side, cuts the
     * server's address once connected, then has the server send a line: whether the client inside reads it within
     * 3 s.
     */
    private static boolean hearsTheServerAfterTheCut(String net, String tag, boolean bothWays)
            throws IOException, InterruptedException {
        NetworkNamespace.Builder builder =
                NetworkNamespace.builder(NetworkNamespace.ownedName("tsn", tag)).link(net + ".1", net + ".2", 30);
        if (bothWays) {
            builder.cutsBothWays();
        }
        try (NetworkNamespace namespace = builder.build();
                ServerSocket server = new ServerSocket(0, 50, InetAddress.getByName(net + ".1"))) {
            return hearsTheServerAfterTheCut(namespace, server, net + ".1");
        }
    }

    private static boolean hearsTheServerAfterTheCut(NetworkNamespace namespace, ServerSocket server, String address)
            throws IOException, InterruptedException {
        Process client = new ProcessBuilder(namespace.command(List.of(
                        "timeout",
                        "10",
                        "bash",
                        "-c",
                        "exec 3<>/dev/tcp/" + address + "/" + server.getLocalPort()
                                + "; echo connected; read -t 3 line <&3 && echo \"heard $line\"")))
                .redirectErrorStream(true)
                .start();
        server.setSoTimeout(10_000);
        try (Socket accepted = server.accept();
                BufferedReader out =
                        new BufferedReader(new InputStreamReader(client.getInputStream(), StandardCharsets.UTF_8))) {
            assertThat(out.readLine()).isEqualTo("connected");
            namespace.cut(address);
            accepted.getOutputStream().write("hello\n".getBytes(StandardCharsets.UTF_8));
            accepted.getOutputStream().flush();
            String heard = out.readLine();
            assertThat(client.waitFor(20, TimeUnit.SECONDS)).isTrue();
            return "heard hello".equals(heard);
        } finally {
            client.destroyForcibly();
        }
    }

    private static boolean connects(NetworkNamespace namespace, String address, int port)
            throws IOException, InterruptedException {
        Process process = new ProcessBuilder(namespace.command(
                        List.of("timeout", "5", "bash", "-c", "exec 3<>/dev/tcp/" + address + "/" + port)))
                .redirectErrorStream(true)
                .start();
        process.getInputStream().readAllBytes();
        assertThat(process.waitFor(20, TimeUnit.SECONDS)).isTrue();
        return process.exitValue() == 0;
    }

    private static String run(String... command) throws IOException {
        return new String(new ProcessBuilder(command).start().getInputStream().readAllBytes());
    }
}
