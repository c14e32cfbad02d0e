package dev.fencing.demo;

import java.util.Locale;

/**
 * How a run protects its writes. Both modes take the same ZooKeeper lock per SKU; they differ only on the
 * resource side.
 */
enum Mode {
    /**
     * A plain read-modify-write {@code UPDATE stock SET stock = :computed}, and a plain Kafka consumer that
     * applies every record: what most code does with a distributed lock.
     */
    UNFENCED,
    /**
     * The same read-modify-write through fenced-jdbc (PostgreSQL refuses a write whose token is older than
     * the row's), and the stale-dropping {@code FencedConsumer} downstream.
     */
    FENCED;

    /** The lower-case name used in flags, JSON and reports. */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }
}
