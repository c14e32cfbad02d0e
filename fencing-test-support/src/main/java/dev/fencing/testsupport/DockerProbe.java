package dev.fencing.testsupport;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;

/** Tells, without loading Testcontainers, whether a Docker engine listens on the usual socket. */
final class DockerProbe {
    private DockerProbe() {}

    static boolean engineAnswers() {
        String host = System.getenv("DOCKER_HOST");
        if (host != null && !host.isBlank()) {
            return true;
        }
        Path socket = Path.of("/var/run/docker.sock");
        if (!Files.exists(socket)) {
            return false;
        }
        try (SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            return channel.connect(UnixDomainSocketAddress.of(socket));
        } catch (IOException e) {
            return false;
        }
    }
}
