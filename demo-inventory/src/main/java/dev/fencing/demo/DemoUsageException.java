package dev.fencing.demo;

/**
 * The settings cannot work with the servers found, for example a session timeout that ZooKeeper granted
 * longer than {@code --pause}. The CLI prints the message and exits with {@link InventoryDemo#EXIT_USAGE}.
 */
final class DemoUsageException extends DemoException {
    private static final long serialVersionUID = 1L;

    DemoUsageException(String message) {
        super(message);
    }
}
