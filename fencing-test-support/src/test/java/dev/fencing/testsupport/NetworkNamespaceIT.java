package dev.fencing.testsupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
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
        Optional<String> unavailable = NetworkNamespace.unavailableReason();
        if (unavailable.isPresent()) {
            assertThat(unavailable.get()).doesNotContain("\n").isNotBlank();
            return;
        }
        NetworkNamespace.removeAbandoned("tsn");
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
    void namesThatCannotBeInterfaceNamesAreRefused() {
        assertThatThrownBy(() -> NetworkNamespace.builder("this-name-is-far-too-long"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("this-name-is-far-too-long");
        assertThatThrownBy(() -> NetworkNamespace.ownedName("X", "c1"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'X'");
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
