package dev.fencing.harness;

/**
 * Why a part of the harness could not do its job: a server it cannot reach, a child JVM that would not start or
 * freeze, a topic it could not create. Unchecked; the message names the server, child or value involved, and the
 * tool prints it and exits with its failure code.
 */
public class HarnessException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public HarnessException(String message) {
        super(message);
    }

    public HarnessException(String message, Throwable cause) {
        super(message, cause);
    }
}
