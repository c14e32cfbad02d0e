package dev.fencing.testsupport;

/** A ZooKeeper server or ensemble a test can connect to. Closing it stops what the tests started. */
public interface ZooKeeperEndpoint extends AutoCloseable {

    /** The connect string, {@code host:port[,host:port...]}. */
    String connectString();

    /** Stops the server if the tests started it; an external server is left alone. */
    @Override
    void close();
}
