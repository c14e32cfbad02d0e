package dev.fencing.jdbc.internal;

import dev.fencing.jdbc.FencedTable;
import org.jdbi.v3.core.Handle;

/**
 * The fencing-db module's {@code fencing.watermark} table as a {@link FencedTable}, checked against the database
 * the first time a watermark is written (like any table) and kept. Thread-safe: two threads may both check
 * it at first; either result is the same table.
 */
final class WatermarkTable {
    static final String NAME = "fencing.watermark";

    /** Extra assignment of the watermark upsert. */
    static final String STAMP = "\"updated_at\" = pg_catalog.now()";

    private volatile FencedTable table;

    FencedTable get(Handle handle) {
        FencedTable checked = table;
        if (checked == null) {
            checked = FencedTable.builder()
                    .schema("fencing")
                    .table("watermark")
                    .keyColumns("resource_key")
                    .fenceColumn("fence_token")
                    .build(handle);
            table = checked;
        }
        return checked;
    }
}
