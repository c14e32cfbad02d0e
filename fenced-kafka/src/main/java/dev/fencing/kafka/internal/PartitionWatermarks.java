package dev.fencing.kafka.internal;

import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiConsumer;
import org.apache.kafka.common.utils.Bytes;

/**
 * The watermarks of one owned partition, changed in place while a batch runs and either committed or rolled
 * back with it. Poll thread only.
 *
 * <p>Why not a {@code HashMap<Bytes, Long>}: this is the one lookup every record pays. An open-addressing
 * table of {@link Mark}s keyed by the raw key bytes costs no allocation per lookup and two memory reads
 * (the mark, its key) instead of four (node, {@code Bytes}, its array, the value). A batch keeps the marks
 * it raised in a list (each once), which is also what the store saves.
 */
public final class PartitionWatermarks {
    private Mark[] table;
    private int used; // slots taken, including marks of rolled-back new keys (token 0)
    private int live; // marks with a committed token
    private final List<Mark> raised = new ArrayList<>();
    private final Map<Bytes, Long> raisedView = new RaisedView();
    private int batch;
    // true: every key with a stored watermark has a mark here, so a key without one has none. false: a key
    // without a mark is unknown and must be loaded (lazily, from the store) before its record is judged.
    private boolean complete;

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
        table = new Mark[capacityFor(stored.size())];
        stored.forEach((key, token) -> {
            byte[] bytes = key.get();
            Mark mark = new Mark(bytes, KeyHash.of(bytes), token);
            insert(mark);
            live++;
        });
    }

    /** One key's watermark: {@code current} includes the running batch, {@code committed} does not. */
    public static final class Mark {
        final byte[] key;
        final int hash;
        long committed;
        long current;
        int batch;

        Mark(byte[] key, int hash, long token) {
            this.key = key;
            this.hash = hash;
            this.committed = token;
            this.current = token;
        }

        /** The token, 0 if none was accepted. */
        public long current() {
            return current;
        }
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
        if ((used + 1) * 2 > table.length) {
            resize();
        }
        insert(new Mark(key, KeyHash.of(key), token));
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
        if (used <= maxKeys || !raised.isEmpty()) {
            return 0;
        }
        int dropped = live;
        table = new Mark[capacityFor(0)];
        used = 0;
        live = 0;
        complete = !lazyAfterwards;
        return dropped;
    }

    /** Starts a batch: nothing raised yet. */
    public void begin() {
        batch++;
        raised.clear();
    }

    /** The key's mark, or null if no token was ever accepted for it. */
    public Mark find(byte[] key) {
        return find(key, 0, key.length);
    }

    /** Like {@link #find(byte[])} for the key in {@code bytes[offset, offset + length)}, read in place. */
    public Mark find(byte[] bytes, int offset, int length) {
        int h = KeyHash.of(bytes, offset, length);
        int end = offset + length;
        Mark[] t = table;
        int mask = t.length - 1;
        for (int i = h & mask; ; i = (i + 1) & mask) {
            Mark mark = t[i];
            if (mark == null) {
                return null;
            }
            if (mark.hash == h && Arrays.equals(mark.key, 0, mark.key.length, bytes, offset, end)) {
                return mark;
            }
        }
    }

    /**
     * Records that {@code token} was accepted for {@code key}; {@code mark} is what {@link #find} returned.
     * For a new key the array is kept as it is: the caller must not change it afterwards.
     */
    public void raise(byte[] key, Mark mark, long token) {
        if (mark == null) {
            mark = new Mark(key, KeyHash.of(key), 0); // the caller hands over a key nobody else changes
            if ((used + 1) * 2 > table.length) {
                resize();
            }
            insert(mark);
        } else if (token <= mark.current) {
            return;
        }
        if (mark.batch != batch) {
            mark.batch = batch;
            raised.add(mark);
        }
        mark.current = token;
    }

    /** The keys the running batch raised, with their new tokens; a view, valid until the next {@link #begin}. */
    public Map<Bytes, Long> raised() {
        return raisedView;
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
        if (!(raised instanceof PartitionWatermarks.RaisedView)) {
            return false;
        }
        for (Mark mark : ((PartitionWatermarks.RaisedView) raised).marks()) {
            action.accept(mark.key, mark.hash, mark.current);
        }
        return true;
    }

    /** Makes the batch's tokens committed; returns how many keys are new. */
    public int commit() {
        int added = 0;
        for (Mark mark : raised) {
            if (mark.committed == 0) {
                added++;
            }
            mark.committed = mark.current;
        }
        live += added;
        raised.clear();
        return added;
    }

    /** Undoes the running batch. A new key's mark stays in the table with token 0, which means none. */
    public void rollback() {
        for (Mark mark : raised) {
            mark.current = mark.committed;
        }
        raised.clear();
    }

    private void insert(Mark mark) {
        Mark[] t = table;
        int mask = t.length - 1;
        int i = mark.hash & mask;
        while (t[i] != null) {
            i = (i + 1) & mask;
        }
        t[i] = mark;
        used++;
    }

    private void resize() {
        Mark[] old = table;
        table = new Mark[old.length * 2];
        used = 0;
        for (Mark mark : old) {
            if (mark != null) {
                insert(mark);
            }
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
        List<Mark> marks() {
            return raised;
        }

        @Override
        public int size() {
            return raised.size();
        }

        @Override
        public Set<Map.Entry<Bytes, Long>> entrySet() {
            return new AbstractSet<>() {
                @Override
                public int size() {
                    return raised.size();
                }

                @Override
                public Iterator<Map.Entry<Bytes, Long>> iterator() {
                    Iterator<Mark> marks = raised.iterator();
                    return new Iterator<>() {
                        @Override
                        public boolean hasNext() {
                            return marks.hasNext();
                        }

                        @Override
                        public Map.Entry<Bytes, Long> next() {
                            Mark mark = marks.next();
                            return Map.entry(Bytes.wrap(mark.key), mark.current);
                        }
                    };
                }
            };
        }

        @Override
        public void forEach(BiConsumer<? super Bytes, ? super Long> action) {
            for (Mark mark : raised) {
                action.accept(Bytes.wrap(mark.key), mark.current);
            }
        }
    }
}
