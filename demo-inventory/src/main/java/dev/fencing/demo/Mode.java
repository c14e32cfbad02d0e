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
     * The same read-modify-write through fenced-jdbc: the read first claims the row with the token, and
     * PostgreSQL refuses a claim or write whose token is older than the row's, so the fence covers the read
     * as well as the write. Downstream, the stale-dropping {@code FencedConsumer}.
     */
    FENCED;

    /** The lower-case name used in flags, JSON and reports. */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }
}
