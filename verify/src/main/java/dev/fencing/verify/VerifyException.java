package dev.fencing.verify;

/** A run that cannot go on: a server out of reach, a client that cannot start. The message says which. */
final class VerifyException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    VerifyException(String message) {
        super(message);
    }

    VerifyException(String message, Throwable cause) {
        super(message, cause);
    }
}
