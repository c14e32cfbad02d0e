package dev.fencing.kafka.internal;

import java.nio.ByteBuffer;

/** Copies of fetched buffers. */
final class FetchedBytes {
    private FetchedBytes() {}

    /** The buffer's remaining bytes, copied, or null; the buffer is not moved. */
    static byte[] copy(ByteBuffer buffer) {
        if (buffer == null) {
            return null;
        }
        byte[] bytes = new byte[buffer.remaining()];
        buffer.duplicate().get(bytes);
        return bytes;
    }
}
