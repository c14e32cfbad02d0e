package dev.fencing.testsupport;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A TCP relay on {@code 127.0.0.1} in front of one server, for a link that a test can hold back: each
 * connection it accepts is joined to a new connection to the server, and bytes are copied both ways until
 * {@link #holdBack()}. From then on every byte the relay receives from the server stays in the relay, counted
 * ({@link #heldBackBytes()}) and never delivered, while the clients' bytes still reach the server. Both ends
 * stay connected: the server sees its client connected and talking, the client sees a server that says
 * nothing more.
 *
 * <pre>{@code
 * try (TcpRelay link = TcpRelay.to(primary.port());
 *         EmbeddedRedisServer replica = EmbeddedRedisServer.builder()
 *                 .setting("replicaof", "127.0.0.1 " + link.port())
 *                 .build()) {
 *     link.holdBack();    // the primary's next writes never reach the replica; its acks still reach the primary
 * }
 * }</pre>
 *
 * <p>Freezing the client with SIGSTOP does not hold bytes back: the kernel keeps receiving them into the
 * frozen process's socket buffer, and the process reads them once it is resumed, even if the server was
 * killed meanwhile. Bytes held here are not in any socket: nothing can deliver them.
 *
 * <p>{@link #holdBackRequests()} does the same to the clients' bytes: they never reach the server. With
 * {@link #dropConnections()} after either, a test loses a request or a reply on purpose: the connections open
 * then are closed, and the client's reconnect gets a clean link.
 *
 * <p>When either side of a connection closes or fails, the relay closes the other side (bytes held back are
 * dropped); a client that connects while the server is down is closed at once. {@link #close()} stops
 * accepting and closes every connection; safe twice. Thread-safe.
 */
public final class TcpRelay implements AutoCloseable {
    private final int serverPort;
    private final ServerSocket listener;
    private final List<Socket> sockets = new ArrayList<>();
    private final AtomicLong heldBack = new AtomicLong();
    private final AtomicLong heldBackRequests = new AtomicLong();
    private volatile boolean holdingBack;
    private volatile boolean holdingBackRequests;
    /** How many more bytes from the server to deliver before holding back; -1: no such limit. Guarded by this. */
    private long passBeforeHolding = -1;

    private boolean closed;

    private TcpRelay(int serverPort) {
        this.serverPort = serverPort;
        try {
            this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        } catch (IOException e) {
            throw new UncheckedIOException("no free port for a relay to port " + serverPort, e);
        }
        Thread acceptor = new Thread(this::accept, "fencing-relay-" + port() + "-accept");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    /** A relay to the server listening on {@code 127.0.0.1:serverPort}, accepting connections at once. */
    public static TcpRelay to(int serverPort) {
        if (serverPort < 1 || serverPort > 65_535) {
            throw new IllegalArgumentException("not a TCP port: " + serverPort);
        }
        return new TcpRelay(serverPort);
    }

    /** The port clients connect to, on {@code 127.0.0.1}. */
    public int port() {
        return listener.getLocalPort();
    }

    /**
     * From now on, bytes from the server are held back: every byte the relay receives from the server after
     * this returns is counted and never delivered, on the connections open now and on later ones. Bytes from
     * the clients still reach the server. There is no way back: the clients' streams have a gap.
     */
    public void holdBack() {
        holdingBack = true;
    }

    /**
     * From now on, the server's next {@code bytes} bytes are delivered and every byte after them is held back, as
     * after {@link #holdBack()}: a reply cut off part way, on the connections open now and on later ones.
     */
    public void holdBackAfter(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("a negative number of bytes to deliver: " + bytes);
        }
        synchronized (this) {
            passBeforeHolding = bytes;
        }
    }

    /** How many bytes from the server have been held back so far. */
    public long heldBackBytes() {
        return heldBack.get();
    }

    /**
     * From now on, bytes from the clients are held back: counted ({@link #heldBackRequestBytes()}) and never
     * delivered to the server, which still sees its clients connected.
     */
    public void holdBackRequests() {
        holdingBackRequests = true;
    }

    /** How many bytes from the clients have been held back so far. */
    public long heldBackRequestBytes() {
        return heldBackRequests.get();
    }

    /**
     * Closes every connection open now, dropping what was held back, and stops holding back: connections
     * accepted afterwards relay both ways. The relay keeps accepting.
     */
    public void dropConnections() {
        List<Socket> open;
        synchronized (this) {
            open = List.copyOf(sockets);
            sockets.clear();
            open.forEach(TcpRelay::closeQuietly);
            holdingBack = false;
            holdingBackRequests = false;
            passBeforeHolding = -1;
        }
    }

    @Override
    public void close() {
        List<Socket> open;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            open = List.copyOf(sockets);
            sockets.clear();
        }
        closeQuietly(listener);
        open.forEach(TcpRelay::closeQuietly);
    }

    @Override
    public String toString() {
        return "relay " + port() + " -> " + serverPort + (holdingBack ? " (holding back)" : "");
    }

    private void accept() {
        while (true) {
            Socket client;
            try {
                client = listener.accept();
            } catch (IOException closedOrBroken) {
                return;
            }
            Socket server = new Socket();
            if (!register(client) || !register(server)) {
                return;
            }
            try {
                server.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), serverPort), 5_000);
            } catch (IOException serverDown) {
                closeQuietly(client);
                closeQuietly(server);
                continue;
            }
            pump(client, server, false, "up");
            pump(server, client, true, "down");
        }
    }

    /** Remembers {@code socket} for {@link #close()}; closes it and answers false once the relay is closed. */
    private synchronized boolean register(Socket socket) {
        sockets.removeIf(Socket::isClosed);
        if (closed) {
            closeQuietly(socket);
            return false;
        }
        sockets.add(socket);
        return true;
    }

    private void pump(Socket from, Socket to, boolean fromServer, String direction) {
        Thread thread = new Thread(
                () -> {
                    byte[] buffer = new byte[16 * 1024];
                    try (InputStream in = from.getInputStream();
                            OutputStream out = to.getOutputStream()) {
                        int read;
                        while ((read = in.read(buffer)) >= 0) {
                            // the flags are read after the bytes arrived: what arrives after holdBack() is held
                            int pass = fromServer ? passable(read) : holdingBackRequests ? 0 : read;
                            if (pass > 0) {
                                out.write(buffer, 0, pass);
                                out.flush();
                            }
                            (fromServer ? heldBack : heldBackRequests).addAndGet(read - pass);
                        }
                    } catch (IOException closedOrReset) {
                        // either side went away: the other one goes too
                    } finally {
                        closeQuietly(from);
                        closeQuietly(to);
                    }
                },
                "fencing-relay-" + port() + "-" + direction);
        thread.setDaemon(true);
        thread.start();
    }

    /**
     * How many of {@code read} bytes from the server go through: none once holding back, all without a {@link
     * #holdBackAfter} limit, else up to the limit, after which it holds back.
     */
    private synchronized int passable(int read) {
        if (holdingBack) {
            return 0;
        }
        if (passBeforeHolding < 0) {
            return read;
        }
        int pass = (int) Math.min(read, passBeforeHolding);
        passBeforeHolding -= pass;
        if (passBeforeHolding == 0) {
            passBeforeHolding = -1;
            holdingBack = true;
        }
        return pass;
    }

    private static void closeQuietly(Closeable closeable) {
        try {
            closeable.close();
        } catch (IOException e) {
            // closing what is already broken: nothing to report
        }
    }
}
