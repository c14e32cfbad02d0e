package org.apache.kafka.common.utils;

import java.io.InputStream;
import java.nio.ByteBuffer;

/**
 * Bench only: kafka-clients 3.x's {@code ByteBufferInputStream}, which 4.x moved to {@code
 * org.apache.kafka.common.utils.internals}. Confluent's Parallel Consumer 0.5.3.3 reads its offset metadata with
 * it and fails in its broker-poll thread with {@code NoClassDefFoundError} without it (see {@link
 * CloseableIterator}).
 */
public final class ByteBufferInputStream extends InputStream {
    private final ByteBuffer buffer;

    public ByteBufferInputStream(ByteBuffer buffer) {
        this.buffer = buffer;
    }

    @Override
    public int read() {
        if (!buffer.hasRemaining()) {
            return -1;
        }
        return buffer.get() & 0xFF;
    }

    @Override
    public int read(byte[] bytes, int off, int len) {
        if (len == 0) {
            return 0;
        }
        if (!buffer.hasRemaining()) {
            return -1;
        }
        len = Math.min(len, buffer.remaining());
        buffer.get(bytes, off, len);
        return len;
    }

    @Override
    public int available() {
        return buffer.remaining();
    }
}
