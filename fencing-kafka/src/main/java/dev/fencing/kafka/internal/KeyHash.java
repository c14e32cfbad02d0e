package dev.fencing.kafka.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * The hash of a record key's bytes, read eight at a time: {@link java.util.Arrays#hashCode(byte[])} takes one
 * multiply per byte, and this is paid by every record. The same bytes always give the same hash, whether they
 * are a whole array or a range of a larger one.
 */
public final class KeyHash {
    private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final long MULTIPLIER = 0x9E3779B97F4A7C15L; // 2^64 / golden ratio

    private KeyHash() {}

    public static int of(byte[] bytes) {
        return of(bytes, 0, bytes.length);
    }

    public static int of(byte[] bytes, int offset, int length) {
        long h = length * MULTIPLIER;
        int i = offset;
        int end = offset + length;
        for (; i + Long.BYTES <= end; i += Long.BYTES) {
            h = (h ^ (long) LONGS.get(bytes, i)) * MULTIPLIER;
            h ^= h >>> 29;
        }
        long tail = 0;
        for (int shift = 0; i < end; i++, shift += 8) {
            tail |= (bytes[i] & 0xFFL) << shift;
        }
        h = (h ^ tail) * MULTIPLIER;
        h ^= h >>> 32;
        return (int) h;
    }
}
