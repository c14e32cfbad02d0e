package dev.fencing.verify.checker;

/** How an operation (or its publish) completed, as its client recorded it. */
public enum Outcome {
    /** Acknowledged: the write committed, or Kafka acknowledged the record. */
    OK,
    /** Definitely not done: the write was refused (a stale token, for example), nothing changed. */
    FAIL,
    /**
     * Indeterminate: the client does not know (an error after the request left, a connection killed
     * mid-transaction), or it recorded no completion at all (killed before it could). It may or may not have
     * happened.
     */
    INFO
}
