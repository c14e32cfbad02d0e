package dev.fencing.demo;

/**
 * Why the demo could not run: a server it cannot reach, a worker that would not start, a projection that
 * never caught up. Unchecked; the message names the server, worker or value involved, and {@link
 * InventoryDemo} prints it and exits with {@link InventoryDemo#EXIT_FAILURE}.
 */
class DemoException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public DemoException(String message) {
        super(message);
    }

    public DemoException(String message, Throwable cause) {
        super(message, cause);
    }
}
