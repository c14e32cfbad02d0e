package dev.fencing.jdbc.internal;

/**
 * A set of {@code long}s without a box or a node per element: how {@code FencedBatch.Builder} remembers the
 * whole-number keys it has taken, so that finding a key named twice costs a batch of thousands of rows
 * little. Open addressing with linear probing; grows at half full. Not thread-safe.
 */
public final class LongSet {
    private long[] slots = new long[16];
    private boolean[] used = new boolean[16];
    private int size;

    /** {@code true} when {@code value} was not in the set and now is. */
    public boolean add(long value) {
        if (size * 2 >= slots.length) {
            grow();
        }
        int mask = slots.length - 1;
        for (int i = slot(value, mask); ; i = (i + 1) & mask) {
            if (!used[i]) {
                used[i] = true;
                slots[i] = value;
                size++;
                return true;
            }
            if (slots[i] == value) {
                return false;
            }
        }
    }

    public int size() {
        return size;
    }

    private void grow() {
        long[] oldSlots = slots;
        boolean[] oldUsed = used;
        slots = new long[oldSlots.length * 2];
        used = new boolean[oldSlots.length * 2];
        size = 0;
        for (int i = 0; i < oldSlots.length; i++) {
            if (oldUsed[i]) {
                add(oldSlots[i]);
            }
        }
    }

    /** Keys are often consecutive: mix the bits so that they spread over the table. */
    private static int slot(long value, int mask) {
        long h = value * 0x9E3779B97F4A7C15L;
        return (int) (h ^ (h >>> 32)) & mask;
    }
}
