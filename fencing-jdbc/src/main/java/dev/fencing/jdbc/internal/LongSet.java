package dev.fencing.jdbc.internal;

import java.util.Arrays;

/**
 * A set of {@code long}s without a box or a node per element: how {@code FencedBatch.Builder} remembers the
 * whole-number keys it has taken, so that finding a key named twice costs a batch of thousands of rows
 * little. Values that arrive in strictly ascending order (a batch of sorted keys, as writers often build
 * them) are only appended: each is new because it is above the last one. The first value that is not moves
 * them all into a hash table (open addressing with linear probing in one array, 0 marking a free slot; the
 * value 0 itself is a flag of its own; grows at half full), which takes every value after it. Not
 * thread-safe.
 */
public final class LongSet {
    /** The values so far while they came in ascending order; null once they are in {@link #slots}. */
    private long[] ascending = new long[64];

    private long[] slots;
    private boolean hasZero;
    private int size;

    /** {@code true} when {@code value} was not in the set and now is. */
    public boolean add(long value) {
        if (ascending != null) {
            if (size == 0 || value > ascending[size - 1]) {
                if (size == ascending.length) {
                    ascending = Arrays.copyOf(ascending, size * 2);
                }
                ascending[size++] = value;
                return true;
            }
            hashAll();
        }
        if (value == 0) {
            if (hasZero) {
                return false;
            }
            hasZero = true;
            size++;
            return true;
        }
        if (size * 2 >= slots.length) {
            grow();
        }
        if (!insert(slots, value)) {
            return false;
        }
        size++;
        return true;
    }

    public int size() {
        return size;
    }

    /** Moves the ascending values into a hash table that holds them at most half full. */
    private void hashAll() {
        int capacity = 64;
        while (size * 2 >= capacity) {
            capacity *= 2;
        }
        slots = new long[capacity];
        for (int i = 0; i < size; i++) {
            long value = ascending[i];
            if (value == 0) {
                hasZero = true;
            } else {
                insert(slots, value);
            }
        }
        ascending = null;
    }

    /** Puts a non-zero value into {@code table}; {@code false} when it was there. */
    private static boolean insert(long[] table, long value) {
        int mask = table.length - 1;
        for (int i = slot(value, mask); ; i = (i + 1) & mask) {
            long slot = table[i];
            if (slot == 0) {
                table[i] = value;
                return true;
            }
            if (slot == value) {
                return false;
            }
        }
    }

    private void grow() {
        long[] grown = new long[slots.length * 2];
        for (long value : slots) {
            if (value != 0) {
                insert(grown, value);
            }
        }
        slots = grown;
    }

    /** Keys are often consecutive: mix the bits so that they spread over the table. */
    private static int slot(long value, int mask) {
        long h = value * 0x9E3779B97F4A7C15L;
        return (int) (h ^ (h >>> 32)) & mask;
    }
}
