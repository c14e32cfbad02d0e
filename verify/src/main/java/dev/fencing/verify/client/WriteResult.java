package dev.fencing.verify.client;

/**
 * How one append ended, from the writer's point of view.
 *
 * @param kind applied (committed), refused (definitely not done), or indeterminate (may or may not have committed)
 * @param detail the reason for refused and indeterminate, else empty
 */
record WriteResult(Kind kind, String detail) {
    enum Kind {
        APPLIED,
        REFUSED,
        INDETERMINATE
    }

    static WriteResult applied() {
        return new WriteResult(Kind.APPLIED, "");
    }

    static WriteResult refused(String reason) {
        return new WriteResult(Kind.REFUSED, reason);
    }

    static WriteResult indeterminate(Throwable error) {
        String message = error.getMessage() == null ? "" : error.getMessage().replaceAll("\\s+", " ");
        if (message.length() > 200) {
            message = message.substring(0, 200) + "...";
        }
        return new WriteResult(Kind.INDETERMINATE, error.getClass().getSimpleName() + ": " + message);
    }
}
