package dev.fencing.verify.client;

import java.util.Locale;
import java.util.Random;

/** How a writer appends an operation's id to its resource's row. */
enum WritePath {
    /** {@code FencedWriter.tryUpdate}: a fenced UPDATE whose SET appends the id. */
    UPDATE,
    /** {@code FencedWriter.tryUpsert} of the row, then the append in the same transaction. */
    UPSERT,
    /** {@code FencedWriter.tryBatch} of a one-row {@code FencedBatch}, then the append in the same transaction. */
    BATCH,
    /** {@code FencedWriter.claimAndRun}: the claim, then the append in the callback. */
    CLAIM,
    /** The control run's plain UPDATE appending the id, no token checked. */
    PLAIN;

    String label() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** A fenced path: 40% update, 20% each of upsert, batch and claim. */
    static WritePath fenced(Random random) {
        int draw = random.nextInt(10);
        if (draw < 4) {
            return UPDATE;
        }
        return draw < 6 ? UPSERT : draw < 8 ? BATCH : CLAIM;
    }
}
