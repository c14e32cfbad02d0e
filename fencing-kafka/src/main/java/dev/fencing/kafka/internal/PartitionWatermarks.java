package dev.fencing.kafka.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Set;
import java.util.function.BiConsumer;
import org.apache.kafka.common.utils.Bytes;

/**
 * The watermarks of one owned partition, changed in place while a batch runs and either committed or rolled
 * back with it. Poll thread only (the key-parallel consumer's workers call it under the partition's monitor).
 *
 * <p>Why not a {@code HashMap<Bytes, Long>}: this is the one lookup every record pays, and with many keys it
 * is a cache miss, not arithmetic. An open-addressing table whose slots lie side by side in one {@code long[]}
 * (the key's hash and length, its first eight bytes, the current and the committed token: 32 bytes, half a
 * cache line) answers a lookup of a key of up to eight bytes from one cache line, with no allocation; longer
 * keys compare their remaining bytes with the slot's copy of the key. A slot's index is what {@link #find}
 * returns and {@link #raise} takes; it stays valid until the table grows (a new key) or drops its keys.
 */
public final class PartitionWatermarks {
    /** What {@link #find} returns for a key without a mark. */
    public static final int NONE = -1;

    private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    // a slot's words: HEAD is (hash << 32) | (key length + 1), never 0 for a used slot and 0 for a free one
    private static final int STRIDE = 4;
    private static final int HEAD = 0;
    private static final int PREFIX = 1;
    private static final int CURRENT = 2; // the token including the running batch, 0 if none
    private static final int COMMITTED = 3; // the token without it

    private long[] words;
    private byte[][] keys; // each slot's whole key, never changed once in the table
    private boolean[] listed; // whether the slot is among the batch's raised ones
    private int mask;
    private int used; // slots taken, including marks of rolled-back new keys (token 0)
    private int live; // marks with a committed token
    private int[] raised = new int[16]; // the slots the running batch raised, each once
    private int raisedCount;
    private final Map<Bytes, Long> raisedView = new RaisedView();
    private final Set<Bytes> raisedNewView = new RaisedNewView();
    // true: every key with a stored watermark has a mark here, so a key without one has none. false: a key
    // without a mark is unknown and must be loaded (lazily, from the store) before its record is judged.
    private boolean complete;
    // keys a key-parallel member applied past the stored offset, with their applied offsets; null if none
    private Map<Bytes, Long> appliedAhead;
    private long appliedAheadMax = -1;

    /** A table that holds every stored watermark of the partition: {@code stored} is all of them. */
    public PartitionWatermarks(Map<Bytes, Long> stored) {
        this(stored, true);
    }

    /** An empty table whose keys are loaded as their records arrive. */
    public static PartitionWatermarks lazy() {
        return new PartitionWatermarks(Map.of(), false);
    }

    private PartitionWatermarks(Map<Bytes, Long> stored, boolean complete) {
        this.complete = complete;
        allocate(capacityFor(stored.size()));
        stored.forEach((key, token) -> {
            insert(key.get(), KeyHash.of(key.get()), token);
            live++;
        });
    }

    /** Keys with a committed watermark. */
    public int size() {
        return live;
    }

    /** Keys with a mark, including those loaded without a watermark; what {@link #evictIfAbove} compares. */
    public int slots() {
        return used;
    }

    /** Whether a key without a mark has no watermark (true), or is merely not loaded yet (false). */
    public boolean complete() {
        return complete;
    }

    /**
     * Adds a key loaded from the store, with its stored token or 0 for none; the key must have no mark yet and
     * its array must never change afterwards.
     */
    public void load(byte[] key, long token) {
        growIfFull();
        insert(key, KeyHash.of(key), token);
        if (token > 0) {
            live++;
        }
    }

    /**
     * Forgets every mark if more than {@code maxKeys} are held, between batches only; returns how many
     * committed watermarks were dropped. With a store the table becomes lazy (they are loaded again when
     * their keys come back); without one ({@code lazyAfterwards} false) they are lost.
     */
    public int evictIfAbove(int maxKeys, boolean lazyAfterwards) {
        if (used <= maxKeys || raisedCount > 0) {
            return 0;
        }
        int dropped = live;
        allocate(capacityFor(0));
        used = 0;
        live = 0;
        complete = !lazyAfterwards;
        return dropped;
    }

    /**
     * Notes that the key's records up to {@code offset} were applied by a key-parallel member before this
     * consumer took the partition ({@link AppliedOffsetStore}); serial consumer only.
     */
    public void appliedThrough(Bytes key, long offset) {
        if (appliedAhead == null) {
            appliedAhead = new HashMap<>();
        }
        appliedAhead.merge(key, offset, Math::max);
        appliedAheadMax = Math.max(appliedAheadMax, offset);
    }

    /**
     * Forgets every applied offset below {@code nextOffset}, the partition's committed next offset, once it is past
     * all of them: a key whose last record was applied ahead would otherwise cost every later record a lookup.
     */
    public void committedThrough(long nextOffset) {
        if (appliedAhead != null && nextOffset > appliedAheadMax) {
            appliedAhead = null;
        }
    }

    /**
     * Whether the key's record at {@code offset} was applied before ({@link #appliedThrough}); a key's first
     * record past its applied offset forgets it (its later records come after). One null check when no key was
     * applied ahead, the usual case.
     */
    public boolean appliedBefore(byte[] key, long offset) {
        if (appliedAhead == null) {
            return false;
        }
        Bytes wrapped = Bytes.wrap(key);
        Long applied = appliedAhead.get(wrapped);
        if (applied == null) {
            return false;
        }
        if (offset <= applied) {
            return true;
        }
        appliedAhead.remove(wrapped);
        if (appliedAhead.isEmpty()) {
            appliedAhead = null;
        }
        return false;
    }

    /** Starts a batch: nothing raised yet. */
    public void begin() {
        unlist();
    }

    /** The slot of the key's mark, or {@link #NONE} if it has none. */
    public int find(byte[] key) {
        return find(key, 0, key.length);
    }

    /** Like {@link #find(byte[])} for the key in {@code bytes[offset, offset + length)}, read in place. */
    public int find(byte[] bytes, int offset, int length) {
        int h = KeyHash.of(bytes, offset, length);
        long head = head(h, length);
        long prefix = prefix(bytes, offset, length);
        long[] w = words;
        int m = mask;
        for (int i = h & m; ; i = (i + 1) & m) {
            int base = i * STRIDE;
            long slotHead = w[base + HEAD];
            if (slotHead == 0) {
                return NONE;
            }
            if (slotHead == head
                    && w[base + PREFIX] == prefix
                    && (length <= Long.BYTES
                            || Arrays.equals(
                                    keys[i], Long.BYTES, length, bytes, offset + Long.BYTES, offset + length))) {
                return i;
            }
        }
    }

    /** The token of the mark in {@code slot} (running batch included), 0 for {@link #NONE} or none accepted. */
    public long current(int slot) {
        return slot == NONE ? 0 : words[slot * STRIDE + CURRENT];
    }

    /** The key of the mark in {@code slot}: the table's own array, which nobody may change. */
    public byte[] key(int slot) {
        return keys[slot];
    }

    /**
     * Records that {@code token} was accepted for {@code key}, whose slot {@link #find} returned (no key was
     * added since); for {@link #NONE}, adds {@code key}, whose array is kept as it is: the caller must not change
     * it afterwards.
     *
     * @throws IllegalStateException naming the key and the slot, if the slot does not hold {@code key} or {@code
     *     key} has a mark although the slot given is {@link #NONE}: the table changed since the lookup, and
     *     raising would move another key's watermark or give this key two
     */
    public void raise(byte[] key, int slot, long token) {
        if (key == null) {
            throw new IllegalStateException("raise of slot " + slot + " without a key");
        }
        if (slot == NONE) {
            int marked = find(key);
            if (marked != NONE) {
                throw new IllegalStateException("key " + Keys.describe(key) + " was raised as new (slot NONE) but"
                        + " has a mark in slot " + marked + ": the table changed since its lookup");
            }
            growIfFull();
            slot = insert(key, KeyHash.of(key), 0); // the caller hands over a key nobody else changes
        } else {
            byte[] held = slot >= 0 && slot < keys.length ? keys[slot] : null;
            if (held != key && (held == null || !Arrays.equals(held, key))) {
                throw new IllegalStateException("key " + Keys.describe(key) + " was raised in slot " + slot
                        + ", which holds " + (held == null ? "no key" : "key " + Keys.describe(held))
                        + ": the table changed since its lookup");
            }
            if (token <= words[slot * STRIDE + CURRENT]) {
                return;
            }
        }
        if (!listed[slot]) {
            listed[slot] = true;
            if (raisedCount == raised.length) {
                raised = Arrays.copyOf(raised, raisedCount * 2);
            }
            raised[raisedCount++] = slot;
        }
        words[slot * STRIDE + CURRENT] = token;
    }

    /**
     * {@link #raise(byte[], int, long)} for a key looked up again now: for a caller that may have let others add
     * keys since its own lookup (the key-parallel workers). The array is kept if the key is new.
     */
    public void raise(byte[] key, long token) {
        raise(key, find(key), token);
    }

    /** The keys the running batch raised, with their new tokens; a view, valid until the next {@link #begin}. */
    public Map<Bytes, Long> raised() {
        return raisedView;
    }

    /**
     * The keys of {@link #raised()} without a committed watermark here: loaded from the store without one, or
     * first seen in the running batch (a store's hint, {@code PartitionProgress.newKeys}). A view, valid until
     * the next {@link #begin}.
     */
    public Set<Bytes> raisedNew() {
        return raisedNewView;
    }

    /** Receives a raised key with its hash ({@link KeyHash}), so that a store need not hash it again. */
    @FunctionalInterface
    public interface RaisedKey {
        /** {@code key} is never changed afterwards and may be kept. */
        void accept(byte[] key, int hash, long token);
    }

    /**
     * If {@code raised} is a view returned by {@link #raised()}, passes each of its keys to {@code action}
     * and returns true; otherwise returns false and does nothing.
     */
    public static boolean forEachRaised(Map<Bytes, Long> raised, RaisedKey action) {
        if (!(raised instanceof PartitionWatermarks.RaisedView view)) {
            return false;
        }
        view.forEachSlot(action);
        return true;
    }

    /** Makes the batch's tokens committed; returns how many keys are new. */
    public int commit() {
        int added = 0;
        long[] w = words;
        for (int r = 0; r < raisedCount; r++) {
            int base = raised[r] * STRIDE;
            if (w[base + COMMITTED] == 0) {
                added++;
            }
            w[base + COMMITTED] = w[base + CURRENT];
        }
        live += added;
        unlist();
        return added;
    }

    /** Undoes the running batch. A new key's mark stays in the table with token 0, which means none. */
    public void rollback() {
        long[] w = words;
        for (int r = 0; r < raisedCount; r++) {
            int base = raised[r] * STRIDE;
            w[base + CURRENT] = w[base + COMMITTED];
        }
        unlist();
    }

    private void unlist() {
        for (int r = 0; r < raisedCount; r++) {
            listed[raised[r]] = false;
        }
        raisedCount = 0;
    }

    private static long head(int hash, int length) {
        return ((long) hash << 32) | (length + 1L);
    }

    /** The key's first eight bytes (fewer: zero-padded), as one long. */
    private static long prefix(byte[] bytes, int offset, int length) {
        if (length >= Long.BYTES) {
            return (long) LONGS.get(bytes, offset);
        }
        long prefix = 0;
        for (int i = 0; i < length; i++) {
            prefix |= (bytes[offset + i] & 0xFFL) << (8 * i);
        }
        return prefix;
    }

    private void allocate(int capacity) {
        words = new long[capacity * STRIDE];
        keys = new byte[capacity][];
        listed = new boolean[capacity];
        mask = capacity - 1;
    }

    private void growIfFull() {
        if ((used + 1) * 2 > keys.length) {
            resize();
        }
    }

    /** Puts a key without a mark into a free slot; returns the slot. */
    private int insert(byte[] key, int hash, long token) {
        long[] w = words;
        int m = mask;
        int i = hash & m;
        while (w[i * STRIDE + HEAD] != 0) {
            i = (i + 1) & m;
        }
        int base = i * STRIDE;
        w[base + HEAD] = head(hash, key.length);
        w[base + PREFIX] = prefix(key, 0, key.length);
        w[base + CURRENT] = token;
        w[base + COMMITTED] = token;
        keys[i] = key;
        used++;
        return i;
    }

    /** Doubles the table; the batch's raised slots move with their keys. */
    private void resize() {
        long[] oldWords = words;
        byte[][] oldKeys = keys;
        boolean[] oldListed = listed;
        int[] moved = new int[oldKeys.length];
        allocate(oldKeys.length * 2);
        used = 0;
        for (int old = 0; old < oldKeys.length; old++) {
            byte[] key = oldKeys[old];
            if (key == null) {
                continue;
            }
            int base = old * STRIDE;
            int slot = insert(key, (int) (oldWords[base + HEAD] >>> 32), oldWords[base + COMMITTED]);
            words[slot * STRIDE + CURRENT] = oldWords[base + CURRENT];
            listed[slot] = oldListed[old];
            moved[old] = slot;
        }
        for (int r = 0; r < raisedCount; r++) {
            raised[r] = moved[raised[r]];
        }
    }

    private static int capacityFor(int keys) {
        int capacity = 16;
        while (capacity < keys * 2 + 2) {
            capacity <<= 1;
        }
        return capacity;
    }

    private final class RaisedView extends AbstractMap<Bytes, Long> {
        void forEachSlot(RaisedKey action) {
            for (int r = 0; r < raisedCount; r++) {
                int slot = raised[r];
                int base = slot * STRIDE;
                action.accept(keys[slot], (int) (words[base + HEAD] >>> 32), words[base + CURRENT]);
            }
        }

        @Override
        public int size() {
            return raisedCount;
        }

        @Override
        public Set<Map.Entry<Bytes, Long>> entrySet() {
            return new AbstractSet<>() {
                @Override
                public int size() {
                    return raisedCount;
                }

                @Override
                public Iterator<Map.Entry<Bytes, Long>> iterator() {
                    return new Iterator<>() {
                        private int next;

                        @Override
                        public boolean hasNext() {
                            return next < raisedCount;
                        }

                        @Override
                        public Map.Entry<Bytes, Long> next() {
                            if (next >= raisedCount) {
                                throw new NoSuchElementException();
                            }
                            int slot = raised[next++];
                            return Map.entry(Bytes.wrap(keys[slot]), words[slot * STRIDE + CURRENT]);
                        }
                    };
                }
            };
        }

        @Override
        public void forEach(BiConsumer<? super Bytes, ? super Long> action) {
            for (int r = 0; r < raisedCount; r++) {
                int slot = raised[r];
                action.accept(Bytes.wrap(keys[slot]), words[slot * STRIDE + CURRENT]);
            }
        }
    }

    private final class RaisedNewView extends AbstractSet<Bytes> {
        private boolean isNew(int slot) {
            return words[slot * STRIDE + COMMITTED] == 0;
        }

        @Override
        public boolean contains(Object o) {
            if (!(o instanceof Bytes key)) {
                return false;
            }
            int slot = find(key.get());
            return slot != NONE && listed[slot] && isNew(slot);
        }

        /** A pass over the raised keys: call it once, not per key. */
        @Override
        public int size() {
            int n = 0;
            for (int r = 0; r < raisedCount; r++) {
                if (isNew(raised[r])) {
                    n++;
                }
            }
            return n;
        }

        /** Up to the first new key (AbstractSet's would count them all). */
        @Override
        public boolean isEmpty() {
            return !iterator().hasNext();
        }

        @Override
        public Iterator<Bytes> iterator() {
            return new Iterator<>() {
                private int next = skip(0);

                private int skip(int from) {
                    int r = from;
                    while (r < raisedCount && !isNew(raised[r])) {
                        r++;
                    }
                    return r;
                }

                @Override
                public boolean hasNext() {
                    return next < raisedCount;
                }

                @Override
                public Bytes next() {
                    if (next >= raisedCount) {
                        throw new NoSuchElementException();
                    }
                    Bytes key = Bytes.wrap(keys[raised[next]]);
                    next = skip(next + 1);
                    return key;
                }
            };
        }
    }
}
