package dev.fencing.testsupport;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingCluster;

/**
 * A real ZooKeeper ensemble of several servers in this JVM (Curator's {@code TestingCluster}), whose
 * members a test can stop and restart to force leader elections.
 *
 * <pre>{@code
 * try (EmbeddedZooKeeperEnsemble ensemble = EmbeddedZooKeeperEnsemble.start(3)) {
 *     InstanceSpec leader = ensemble.leader().orElseThrow();
 *     ensemble.stop(leader);
 *     ensemble.restart(leader);
 * }
 * }</pre>
 */
public final class EmbeddedZooKeeperEnsemble implements ZooKeeperEndpoint {
    private final TestingCluster cluster;

    private EmbeddedZooKeeperEnsemble(TestingCluster cluster) {
        this.cluster = cluster;
    }

    /** Starts {@code size} servers (at least 3, so the ensemble survives losing one) on 127.0.0.1. */
    public static EmbeddedZooKeeperEnsemble start(int size) {
        return start(size, "127.0.0.1");
    }

    /**
     * Starts {@code size} servers (at least 3) that listen on {@code host}, an address of this host: clients,
     * quorum and election ports alike, so {@link #connectString()} names that address. A client in another
     * network namespace reaches the ensemble through such an address (see {@link NetworkNamespace}).
     */
    public static EmbeddedZooKeeperEnsemble start(int size, String host) {
        if (host == null || host.isBlank()) {
            throw new IllegalArgumentException("host must be an address of this host, got '" + host + "'");
        }
        if (size < 3) {
            throw new IllegalArgumentException("an ensemble needs at least 3 servers, got " + size);
        }
        List<InstanceSpec> specs = new ArrayList<>();
        Map<String, Object> properties = new HashMap<>();
        properties.put("admin.enableServer", "false");
        for (int i = 1; i <= size; i++) {
            specs.add(new InstanceSpec(null, -1, -1, -1, true, i, 500, -1, properties, host));
        }
        TestingCluster cluster = new TestingCluster(specs);
        try {
            cluster.start();
        } catch (Exception e) {
            throw new IllegalStateException("ZooKeeper ensemble of " + size + " failed to start", e);
        }
        return new EmbeddedZooKeeperEnsemble(cluster);
    }

    @Override
    public String connectString() {
        return cluster.getConnectString();
    }

    public List<InstanceSpec> members() {
        return new ArrayList<>(cluster.getInstances());
    }

    /** The member that answers {@code srvr} with {@code Mode: leader}, if one does now. */
    public Optional<InstanceSpec> leader() {
        for (InstanceSpec spec : cluster.getInstances()) {
            if ("leader".equals(mode(spec))) {
                return Optional.of(spec);
            }
        }
        return Optional.empty();
    }

    /** The member's {@code Mode:} line from the {@code srvr} command, or "down". */
    public static String mode(InstanceSpec spec) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(spec.getHostname(), spec.getPort()), 1_000);
            socket.setSoTimeout(2_000);
            OutputStream out = socket.getOutputStream();
            out.write("srvr".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            BufferedReader in =
                    new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.US_ASCII));
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                if (line.startsWith("Mode: ")) {
                    return line.substring("Mode: ".length()).trim();
                }
            }
            return "unknown";
        } catch (IOException e) {
            return "down";
        }
    }

    public void stop(InstanceSpec member) {
        try {
            cluster.killServer(member);
        } catch (Exception e) {
            throw new IllegalStateException("could not stop ZooKeeper member " + member.getServerId(), e);
        }
    }

    public void restart(InstanceSpec member) {
        try {
            cluster.restartServer(member);
        } catch (Exception e) {
            throw new IllegalStateException("could not restart ZooKeeper member " + member.getServerId(), e);
        }
    }

    @Override
    public void close() {
        try {
            cluster.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
