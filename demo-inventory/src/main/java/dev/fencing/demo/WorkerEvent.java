package dev.fencing.demo;

import java.util.Optional;

/**
 * One thing a worker reports to the coordinator, as one line on its standard output:
 *
 * <pre>
 * EVENT &lt;epoch millis&gt; &lt;kind&gt; &lt;sku&gt; &lt;token&gt; &lt;a&gt; &lt;b&gt;     (tab-separated)
 * </pre>
 *
 * What {@code a} and {@code b} mean depends on the kind (see {@link Kind}). Lines that do not start with
 * {@code EVENT} are not events. Immutable.
 *
 * @param atMillis wall-clock time of the event on the worker, epoch milliseconds
 * @param worker the worker's number, filled in by the coordinator (workers write 0)
 */
record WorkerEvent(long atMillis, int worker, Kind kind, String sku, long token, long a, long b) {
    static final String PREFIX = "EVENT";

    /** What happened; {@code a} and {@code b} as noted. */
    public enum Kind {
        /**
         * The worker is connected to all three servers and waits for START; {@code a} is the session timeout
         * ZooKeeper granted it, in milliseconds (the server may grant more or less than was asked).
         */
        READY,
        /**
         * It holds the SKU's lock under {@code token}; {@code a} is the stock it read, or -1 when the fenced
         * read's claim was refused (a {@code REJECTED} follows).
         */
        LOCKED,
        /** The stock is below the quantity it wanted ({@code a}); it releases without writing. */
        SOLD_OUT,
        /** It is armed and stands between two steps ({@code a}: {@link PausePoint#ordinal()}), waiting for GO. */
        POINT,
        /** The database accepted its write of {@code a} units; the stock is now {@code b}. */
        WRITTEN,
        /**
         * PostgreSQL refused the write as stale: the row carries token {@code a}. {@code b} is 1 when it was
         * the claim at the read that was refused (nothing was read or written), 0 for the write itself.
         */
        REJECTED,
        /**
         * Lease-check mode: {@code lease.ensureValid()} right before the write found the lease lost, and the
         * worker wrote nothing.
         */
        LEASE_CHECK_REFUSED,
        /**
         * The lock's listener reported that the lease under {@code token} became invalid (the session was
         * suspended or lost). The worker does not act on it: it is only the mark where the lock really ended.
         */
        LEASE_LOST,
        /** The reservation is in Kafka, stamped with {@code token}, at partition {@code a}, offset {@code b}. */
        PUBLISHED,
        /** It released the lock (or closed the lost lease). */
        RELEASED,
        /** It stopped on an error; the sku field carries the message. */
        FAILED
    }

    /** Where in an operation a worker can be frozen. */
    public enum PausePoint {
        /** After reading the stock, before writing the decrement: the stale write overwrites a newer one. */
        READ_WRITE,
        /** After the write, before publishing to Kafka: the stale record lands after a newer one. */
        WRITE_PUBLISH,
        /**
         * Lease-check mode only: after {@code lease.ensureValid()} passed, before the write. The check cannot
         * see a pause that has not happened yet.
         */
        AFTER_LEASE_CHECK
    }

    /** The line a worker prints. SKUs and messages must not contain tabs or newlines. */
    String toLine() {
        return PREFIX + '\t' + atMillis + '\t' + kind + '\t' + sanitize(sku) + '\t' + token + '\t' + a + '\t' + b;
    }

    /** The event on {@code line} (with {@code worker} set), or empty when the line is not an event. */
    static Optional<WorkerEvent> parse(String line, int worker) {
        if (line == null || !line.startsWith(PREFIX + '\t')) {
            return Optional.empty();
        }
        String[] parts = line.split("\t", -1);
        if (parts.length != 7) {
            return Optional.empty();
        }
        try {
            return Optional.of(new WorkerEvent(
                    Long.parseLong(parts[1]),
                    worker,
                    Kind.valueOf(parts[2]),
                    parts[3],
                    Long.parseLong(parts[4]),
                    Long.parseLong(parts[5]),
                    Long.parseLong(parts[6])));
        } catch (IllegalArgumentException e) {
            return Optional.empty();
        }
    }

    private static String sanitize(String text) {
        return text == null ? "" : text.replace('\t', ' ').replace('\n', ' ').replace('\r', ' ');
    }
}
