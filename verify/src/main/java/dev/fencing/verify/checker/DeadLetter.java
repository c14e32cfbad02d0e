package dev.fencing.verify.checker;

/**
 * A record the consumer refused and sent to the dead-letter topic, as recorded in the {@code dead_letters} table.
 *
 * @param op the operation id the record carried, or null when its value was not one
 * @param key the record's key
 * @param reason why it was refused ({@code STALE_TOKEN}, {@code MISSING_TOKEN}, ...)
 * @param detail the consumer's sentence about it, may be null
 * @param originPartition the partition it was read from
 * @param originOffset its offset there
 */
public record DeadLetter(Long op, String key, String reason, String detail, int originPartition, long originOffset) {
    /** The reason of a record refused because a newer token of its key had been applied. */
    public static final String STALE = "STALE_TOKEN";
    /** The reason of a record refused because it carried no token. */
    public static final String MISSING_TOKEN = "MISSING_TOKEN";

    public boolean stale() {
        return STALE.equals(reason);
    }
}
