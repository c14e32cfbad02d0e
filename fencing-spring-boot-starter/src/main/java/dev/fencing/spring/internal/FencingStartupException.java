package dev.fencing.spring.internal;

/**
 * The toolkit's configuration cannot work, found while the application starts: what is wrong (the
 * description, naming the property or bean) and what to do about it (the action). {@link
 * FencingFailureAnalyzer} shows the two under Spring Boot's "APPLICATION FAILED TO START" banner; the message
 * joins them for a log or a test.
 */
public final class FencingStartupException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    private final String description;
    private final String action;

    public FencingStartupException(String description, String action) {
        this(description, action, null);
    }

    public FencingStartupException(String description, String action, Throwable cause) {
        super(description + ". " + action, cause);
        this.description = description;
        this.action = action;
    }

    /** What is wrong, naming the property or bean. */
    public String description() {
        return description;
    }

    /** What to change. */
    public String action() {
        return action;
    }
}
