package dev.fencing.kafka.internal;

import java.util.ArrayDeque;
import java.util.function.ObjLongConsumer;

/**
 * The offsets of one partition's records handed to the key-parallel workers, in offset order, each marked
 * when its handling finished; the offset that may be committed is that of the lowest record not finished
 * (or, when every record finished, the one after the last). Records of different keys finish out of order,
 * so a record finished above an unfinished one stays here until the one below it finishes: a commit never
 * skips a record. Each finished record may carry the watermark it raised, handed over when the frontier
 * passes it, so that what the store saves for an offset is exactly what the records before it raised. Not
 * thread-safe: its partition's monitor guards it.
 */
public final class OffsetFrontier {
    /** One record: its offset, whether it finished, and the key and token it raised (null: none). */
    public static final class Slot {
        final long offset;
        boolean finished;
        byte[] raisedKey;
        long raisedToken;

        Slot(long offset) {
            this.offset = offset;
        }

        public long offset() {
            return offset;
        }
    }

    private final ArrayDeque<Slot> slots = new ArrayDeque<>();
    private long last = -1; // offset of the last record added; -1: none

    /**
     * Adds the partition's next record.
     *
     * @throws IllegalArgumentException if {@code offset} is not above every offset added before
     */
    public Slot add(long offset) {
        if (offset <= last) {
            throw new IllegalArgumentException("offset " + offset + " is not above the last one added, " + last);
        }
        last = offset;
        Slot slot = new Slot(offset);
        slots.addLast(slot);
        return slot;
    }

    /** Marks a record finished; {@code raisedKey} (null: none) is the key whose watermark it raised to {@code token}. */
    public static void finish(Slot slot, byte[] raisedKey, long token) {
        slot.finished = true;
        slot.raisedKey = raisedKey;
        slot.raisedToken = token;
    }

    /**
     * Drops the finished records at the bottom, handing each raised watermark to {@code raised}, and returns
     * the offset to commit: the lowest unfinished record's, else the one after the last record added; -1 if no
     * record was ever added.
     */
    public long advance(ObjLongConsumer<byte[]> raised) {
        while (!slots.isEmpty() && slots.peekFirst().finished) {
            Slot slot = slots.pollFirst();
            if (slot.raisedKey != null) {
                raised.accept(slot.raisedKey, slot.raisedToken);
            }
        }
        return committable();
    }

    /** The offset to commit as of the last {@link #advance}, without dropping anything. */
    public long committable() {
        if (!slots.isEmpty()) {
            return slots.peekFirst().offset;
        }
        return last < 0 ? -1 : last + 1;
    }

    /** Records held: unfinished ones and finished ones above an unfinished one. */
    public int size() {
        return slots.size();
    }
}
