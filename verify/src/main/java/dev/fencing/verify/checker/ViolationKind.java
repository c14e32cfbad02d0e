package dev.fencing.verify.checker;

/**
 * What a {@link Violation} breaks. The first five are about the resources' lists, the next six about the records,
 * the next three about a resource's final value and stored token ({@link RedisChecker}), the next three about an
 * election's terms: a participant's own view of its term and the grants ({@link ElectionChecker}), the last three
 * about reads and writes under a read/write lock ({@link RwLockChecker}).
 */
public enum ViolationKind {
    /** A list holds an id that no client invoked for that resource. */
    UNKNOWN_ID("id in a list that no client invoked for it"),
    /** A list holds an id twice. */
    DUPLICATE("id twice in a list"),
    /** A list holds an id whose token is below (STRICT: not above) that of an id before it: a stale write landed. */
    TOKEN_ORDER("token lower than an earlier one in the list (a stale write landed)"),
    /** An append its client saw acknowledged is not in its resource's list. */
    LOST_ACKNOWLEDGED("acknowledged write missing from the list"),
    /** An append its client saw refused is in the list anyway. */
    REFUSED_PRESENT("refused write present in the list"),
    /** An applied list or a dead letter holds an id that no client published. */
    RECORD_UNKNOWN_ID("applied or dead-lettered id that no client published"),
    /** An applied list holds an id twice: the record was applied more than once. */
    RECORD_DUPLICATE("record applied twice"),
    /**
     * An applied list holds an id whose token is below that of an id applied before it (a stale record applied), or
     * equal to it but published by another client (two holders of one grant).
     */
    RECORD_TOKEN_ORDER("record applied after a newer token of its key (a stale record applied)"),
    /** A record Kafka acknowledged was neither applied nor dead-lettered. */
    RECORD_LOST("acknowledged record neither applied nor dead-lettered"),
    /**
     * A record was refused without cause: dead-lettered as stale though no newer token of its key was applied
     * before it, dead-lettered and applied, or a stamped record dead-lettered for a missing token.
     */
    RECORD_REFUSED_WRONGLY("record refused without cause"),
    /** A record sent without a token header was applied: the consumer failed open. */
    RECORD_UNSTAMPED_APPLIED("record without a token applied"),
    /**
     * A write was acknowledged under a token below (or equal to) that of a write to the same resource acknowledged
     * before it was sent: a stale write landed, seen from the histories' real-time order.
     */
    STALE_WRITE("write acknowledged under a token below one acknowledged before it was sent (a stale write landed)"),
    /**
     * A resource's final value is not the one left by its highest-token write known to have landed (acknowledged,
     * or indeterminate but in the log), nor by an indeterminate write with a higher token.
     */
    FINAL_VALUE("final value not left by the highest-token write that landed"),
    /** A resource's stored token is not the token of the write whose value it holds. */
    STORED_TOKEN("stored token not that of the write that left the value"),
    /**
     * An election participant's check of its term answered valid although it began after a later term of the same
     * election had been granted (to another participant or to itself, joining again), or after its own term's token
     * had been granted to another participant as well: the local contract of the term's validity broke (whether or
     * not the resource refused what it then wrote).
     */
    LOCAL_VALIDITY("term read valid after the next term's grant (the local contract broke)"),
    /**
     * One election's term (its token) was granted to two participants: two leaders of one term, which a fence
     * comparing tokens cannot tell apart, whatever either of them later read or wrote.
     */
    TERM_GRANTED_TWICE("one term granted to two participants (two leaders of one term)"),
    /**
     * An election's term was granted to a participant that joined the election (again) after a term with a token at
     * or above its own had been granted: the election's tokens went backwards, and a fence comparing them would
     * take the later leader's writes for stale ones or, worse, the earlier leader's for fresh ones.
     */
    TERM_ORDER("term granted after a greater one to a participant that joined after it (tokens went backwards)"),
    /**
     * A read was returned without a write to its resource that had been acknowledged before the read was returned,
     * or saw fewer ids than a read returned before it began: what the reader returned was stale (a write landed
     * while it believed it held the read lock).
     */
    STALE_READ("read returned without a write acknowledged before it (a stale read returned)"),
    /** A write landed in a resource's list under a token that a read grant of the same resource carried. */
    READ_TOKEN_WRITE("write accepted under a read token"),
    /**
     * A read saw what the resource's list cannot explain: more ids than the list the run left holds, or at some
     * position the id of a write invoked after the read was returned (a write the read saw was lost afterwards).
     */
    UNEXPLAINED_READ("read saw ids the list does not explain (a write it saw was lost)");

    private final String description;

    ViolationKind(String description) {
        this.description = description;
    }

    public String description() {
        return description;
    }
}
