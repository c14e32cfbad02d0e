package dev.fencing.demo;

import java.util.Locale;

/**
 * How a run protects its writes. Every mode takes the same ZooKeeper lock per SKU; they differ in what the
 * worker does between its read and its write, and on the resource side.
 */
enum Mode {
    /**
     * A plain read-modify-write {@code UPDATE stock SET stock = :computed}, and a plain Kafka consumer that
     * applies every record: what most code does with a distributed lock.
     */
    UNFENCED,
    /**
     * Like {@link #UNFENCED}, but the worker calls {@code lease.ensureValid()} right before it writes, as
     * careful services do. That narrows the window in which a stale write can land; it cannot close it,
     * because the pause can fall right after the check.
     */
    LEASE_CHECK,
    /**
     * The same read-modify-write through fencing-jdbc: the read first claims the row with the token, and
     * PostgreSQL refuses a claim or write whose token is older than the row's, so the fence covers the read
     * as well as the write. Downstream, the stale-dropping {@code FencedConsumer}.
     */
    FENCED;

    /** The name used in flags, JSON and reports: {@code unfenced}, {@code lease-check}, {@code fenced}. */
    public String label() {
        return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    /**
     * The mode whose {@link #label()} is {@code label}.
     *
     * @throws IllegalArgumentException naming the label otherwise
     */
    public static Mode fromLabel(String label) {
        for (Mode mode : values()) {
            if (mode.label().equals(label)) {
                return mode;
            }
        }
        throw new IllegalArgumentException("no mode is called '" + label + "'");
    }
}
