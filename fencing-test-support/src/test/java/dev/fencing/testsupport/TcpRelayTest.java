package dev.fencing.testsupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class TcpRelayTest {

    @Test
    void bytesFlowBothWaysUntilTheServersAreHeldBackWhileTheClientsStillReachTheServer() throws IOException {
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                TcpRelay relay = TcpRelay.to(server.getLocalPort());
                Socket client = new Socket(InetAddress.getLoopbackAddress(), relay.port());
                Socket accepted = server.accept()) {
            client.setSoTimeout(500);
            OutputStream toServer = client.getOutputStream();
            OutputStream toClient = accepted.getOutputStream();
            InputStream atServer = accepted.getInputStream();
            InputStream atClient = client.getInputStream();

            toServer.write('a');
            assertThat(atServer.read()).isEqualTo('a');
            toClient.write('b');
            assertThat(atClient.read()).isEqualTo('b');

            // when
            relay.holdBack();
            toClient.write(new byte[] {'c', 'd', 'e'});
            toServer.write('f');

            // then
            assertThat(atServer.read()).isEqualTo('f');
            await().atMost(Duration.ofSeconds(10)).until(() -> relay.heldBackBytes() == 3);
            assertThatThrownBy(atClient::read).isInstanceOf(SocketTimeoutException.class);
        }
    }

    @Test
    void whenTheServerGoesAwayTheClientIsDisconnectedWithoutTheHeldBytes() throws IOException {
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                TcpRelay relay = TcpRelay.to(server.getLocalPort());
                Socket client = new Socket(InetAddress.getLoopbackAddress(), relay.port())) {
            client.setSoTimeout(10_000);
            try (Socket accepted = server.accept()) {
                relay.holdBack();
                accepted.getOutputStream().write('x');
                await().atMost(Duration.ofSeconds(10)).until(() -> relay.heldBackBytes() == 1);
            }

            assertThat(client.getInputStream().read()).isEqualTo(-1);
        }
    }

    @Test
    void aClientThatConnectsWhileTheServerIsDownIsClosed() throws IOException {
        int port;
        try (ServerSocket gone = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = gone.getLocalPort();
        }
        try (TcpRelay relay = TcpRelay.to(port);
                Socket client = new Socket(InetAddress.getLoopbackAddress(), relay.port())) {
            client.setSoTimeout(10_000);

            assertThat(client.getInputStream().read()).isEqualTo(-1);
            relay.close(); // twice is harmless
        }
    }

    @Test
    void aBadPortIsRefusedNamingIt() {
        assertThatThrownBy(() -> TcpRelay.to(0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("port: 0");
    }
}
