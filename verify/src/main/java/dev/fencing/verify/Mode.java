package dev.fencing.verify;

import java.util.Locale;

/** The two runs: the toolkit's fencing, and the same workload without it. */
enum Mode {
    /** fencing-jdbc writes, FencedConsumer with PostgresWatermarkStore. */
    FENCED,
    /** Plain UPDATE appends and a plain poll loop: the checker must find violations here. */
    CONTROL;

    String label() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** The database schema of this mode's tables. */
    String schema() {
        return "verify_" + label();
    }
}
