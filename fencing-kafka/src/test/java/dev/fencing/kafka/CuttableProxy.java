package dev.fencing.kafka;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A TCP proxy on 127.0.0.1 in front of a real server, for a client that must lose it: {@link #cut()} closes every
 * connection through it and stops listening (new connections are refused), {@link #heal()} listens again on the
 * same port. Thread-safe.
 */
final class CuttableProxy implements AutoCloseable {
    private final int targetPort;
    private final int port;
    private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
    private ServerSocket server; // null while cut

    CuttableProxy(int targetPort) {
        this.targetPort = targetPort;
        this.server = listen(0);
        this.port = server.getLocalPort();
        accept(server);
    }

    int port() {
        return port;
    }

    /** {@code jdbcUrl} with its host and port replaced by this proxy's. */
    String through(String jdbcUrl) {
        return jdbcUrl.replaceFirst("//[^/:]+:\\d+/", "//127.0.0.1:" + port + "/");
    }

    /** Closes every connection through the proxy; until {@link #heal()}, connecting is refused. */
    synchronized void cut() {
        if (server == null) {
            return;
        }
        closeQuietly(server);
        server = null;
        for (Socket socket : sockets) {
            closeQuietly(socket);
        }
        sockets.clear();
    }

    /** Listens again, on the same port. */
    synchronized void heal() {
        if (server == null) {
            server = listen(port);
            accept(server);
        }
    }

    @Override
    public void close() {
        cut();
    }

    private static ServerSocket listen(int port) {
        try {
            ServerSocket socket = new ServerSocket();
            socket.setReuseAddress(true);
            socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
            return socket;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot listen on port " + port, e);
        }
    }

    private void accept(ServerSocket listening) {
        Thread acceptor = new Thread(
                () -> {
                    while (!listening.isClosed()) {
                        try {
                            Socket client = listening.accept();
                            Socket upstream = new Socket(InetAddress.getLoopbackAddress(), targetPort);
                            synchronized (this) {
                                if (listening != server) { // cut meanwhile
                                    closeQuietly(client);
                                    closeQuietly(upstream);
                                    continue;
                                }
                                sockets.add(client);
                                sockets.add(upstream);
                            }
                            pump(client, upstream);
                            pump(upstream, client);
                        } catch (IOException e) {
                            // closed by cut(), or a connection that failed: the client sees it
                        }
                    }
                },
                "proxy-accept-" + port);
        acceptor.setDaemon(true);
        acceptor.start();
    }

    private void pump(Socket from, Socket to) {
        Thread pump = new Thread(
                () -> {
                    byte[] buffer = new byte[16 * 1024];
                    try (InputStream in = from.getInputStream();
                            OutputStream out = to.getOutputStream()) {
                        int n;
                        while ((n = in.read(buffer)) >= 0) {
                            out.write(buffer, 0, n);
                            out.flush();
                        }
                    } catch (IOException e) {
                        // cut, or one side closed
                    } finally {
                        closeQuietly(from);
                        closeQuietly(to);
                        sockets.remove(from);
                        sockets.remove(to);
                    }
                },
                "proxy-pump-" + port);
        pump.setDaemon(true);
        pump.start();
    }

    private static void closeQuietly(AutoCloseable closeable) {
        try {
            closeable.close();
        } catch (Exception e) {
            // already closed
        }
    }
}
