package dev.fencing.verify.client;

/** Where in an operation a writer stops, when armed, and waits for the coordinator's GO. */
public enum PausePoint {
    /** Holding the lock, token known and the append invoked, before the write: a pause here makes a stale write. */
    LOCK_WRITE,
    /** After the write committed, before the publish: a pause here makes a stale record. */
    WRITE_PUBLISH,
    /** Inside the write's transaction, after the write, before the commit: where a backend is killed. */
    IN_TRANSACTION,
    /**
     * A reader holding its read lock, after its read, before it checks and returns what it read: a pause here makes
     * a stale read.
     */
    READ_USE
}
