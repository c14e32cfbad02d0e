package dev.fencing.verify.checker;

/** A history file that cannot be read as a history: the message names the file, the line and the problem. */
public final class HistoryException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public HistoryException(String message) {
        super(message);
    }

    public HistoryException(String message, Throwable cause) {
        super(message, cause);
    }
}
