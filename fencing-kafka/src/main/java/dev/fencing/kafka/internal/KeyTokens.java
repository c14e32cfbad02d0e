package dev.fencing.kafka.internal;

import java.util.Arrays;
import java.util.function.ObjLongConsumer;

/**
 * Key bytes to the highest token stored for them: an open-addressing table that keeps each key's {@link
 * KeyHash}, so that raising a key the table holds costs one probe and no allocation. Not thread-safe.
 */
public final class KeyTokens {
    private byte[][] keys = new byte[16][];
    private int[] hashes = new int[16];
    private long[] tokens = new long[16];
    private int size;

    /** Stores {@code token} for the key unless a higher one is stored; keeps {@code key}, which must not change. */
    public void raise(byte[] key, int hash, long token) {
        int mask = keys.length - 1;
        for (int i = hash & mask; ; i = (i + 1) & mask) {
            byte[] held = keys[i];
            if (held == null) {
                if ((size + 1) * 2 > keys.length) {
                    grow();
                    raise(key, hash, token);
                    return;
                }
                keys[i] = key;
                hashes[i] = hash;
                tokens[i] = token;
                size++;
                return;
            }
            if (hashes[i] == hash && Arrays.equals(held, key)) {
                tokens[i] = Math.max(tokens[i], token);
                return;
            }
        }
    }

    /** The token stored for the key, 0 if none. */
    public long get(byte[] key, int hash) {
        int mask = keys.length - 1;
        for (int i = hash & mask; ; i = (i + 1) & mask) {
            byte[] held = keys[i];
            if (held == null) {
                return 0;
            }
            if (hashes[i] == hash && Arrays.equals(held, key)) {
                return tokens[i];
            }
        }
    }

    public void raise(byte[] key, long token) {
        raise(key, KeyHash.of(key), token);
    }

    public int size() {
        return size;
    }

    /** Each key (the stored array: do not change it) with its token. */
    public void forEach(ObjLongConsumer<byte[]> action) {
        for (int i = 0; i < keys.length; i++) {
            if (keys[i] != null) {
                action.accept(keys[i], tokens[i]);
            }
        }
    }

    private void grow() {
        byte[][] oldKeys = keys;
        int[] oldHashes = hashes;
        long[] oldTokens = tokens;
        keys = new byte[oldKeys.length * 2][];
        hashes = new int[oldKeys.length * 2];
        tokens = new long[oldKeys.length * 2];
        size = 0;
        for (int i = 0; i < oldKeys.length; i++) {
            if (oldKeys[i] != null) {
                raise(oldKeys[i], oldHashes[i], oldTokens[i]);
            }
        }
    }
}
