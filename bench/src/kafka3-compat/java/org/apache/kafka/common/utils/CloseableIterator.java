package org.apache.kafka.common.utils;

import java.io.Closeable;
import java.util.Iterator;

/**
 * Bench only: kafka-clients 3.x's {@code CloseableIterator}, which 4.x moved to {@code
 * org.apache.kafka.common.utils.internals}. Confluent's Parallel Consumer 0.5.3.3 (built against 3.x) implements
 * it in its retry queue and fails at its first control-loop turn with {@code NoClassDefFoundError:
 * org/apache/kafka/common/utils/CloseableIterator} without it; this copy at the old name lets {@code bench/run
 * kafka-parallel} measure it against the same kafka-clients 4.4 as the fenced consumer.
 */
public interface CloseableIterator<T> extends Iterator<T>, Closeable {
    @Override
    void close();

    static <R> CloseableIterator<R> wrap(Iterator<R> inner) {
        return new CloseableIterator<>() {
            @Override
            public void close() {}

            @Override
            public boolean hasNext() {
                return inner.hasNext();
            }

            @Override
            public R next() {
                return inner.next();
            }

            @Override
            public void remove() {
                inner.remove();
            }
        };
    }
}
