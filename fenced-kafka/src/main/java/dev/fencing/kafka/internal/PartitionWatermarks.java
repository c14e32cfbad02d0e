package dev.fencing.kafka.internal;

import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.utils.Bytes;

/**
 * The watermarks of one owned partition, changed in place while a batch runs and either committed or rolled
 * back with it. One map lookup per record: each key maps to a mutable {@link Mark}, and a batch keeps the
 * marks it raised in a list (each once), which is also what the store saves. Poll thread only.
 */
public final class PartitionWatermarks {
    private final Map<Bytes, Mark> marks;
    private final List<Mark> raised = new ArrayList<>();
    private final Map<Bytes, Long> raisedView = new RaisedView();
    private int batch;

    public PartitionWatermarks(Map<Bytes, Long> stored) {
        marks = new HashMap<>(Math.max(16, (int) (stored.size() / 0.75f) + 1));
        stored.forEach((key, token) -> marks.put(key, new Mark(key, token)));
    }

    /** One key's watermark: {@code current} includes the running batch, {@code committed} does not. */
    public static final class Mark {
        final Bytes key;
        long committed;
        long current;
        int batch;

        Mark(Bytes key, long token) {
            this.key = key;
            this.committed = token;
            this.current = token;
        }

        public long current() {
            return current;
        }
    }

    public int size() {
        return marks.size();
    }

    /** Starts a batch: nothing raised yet. */
    public void begin() {
        batch++;
        raised.clear();
    }

    /** The key's mark, or null if no token was ever accepted for it. */
    public Mark find(Bytes key) {
        return marks.get(key);
    }

    /** Records that {@code token} was accepted for {@code key}; {@code mark} is what {@link #find} returned. */
    public void raise(Bytes key, Mark mark, long token) {
        if (mark == null) {
            mark = new Mark(key, 0);
            marks.put(key, mark);
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

    /** Makes the batch's tokens committed; returns how many keys are new. */
    public int commit() {
        int added = 0;
        for (Mark mark : raised) {
            if (mark.committed == 0) {
                added++;
            }
            mark.committed = mark.current;
        }
        raised.clear();
        return added;
    }

    /** Undoes the running batch. */
    public void rollback() {
        for (Mark mark : raised) {
            if (mark.committed == 0) {
                marks.remove(mark.key);
            } else {
                mark.current = mark.committed;
            }
        }
        raised.clear();
    }

    private final class RaisedView extends AbstractMap<Bytes, Long> {
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
                            return Map.entry(mark.key, mark.current);
                        }
                    };
                }
            };
        }

        @Override
        public void forEach(java.util.function.BiConsumer<? super Bytes, ? super Long> action) {
            for (Mark mark : raised) {
                action.accept(mark.key, mark.current);
            }
        }
    }
}
