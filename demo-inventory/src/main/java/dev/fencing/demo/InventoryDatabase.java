package dev.fencing.demo;

import dev.fencing.FencePolicy;
import dev.fencing.jdbc.FencedTable;
import dev.fencing.jdbc.FencedUpdate;
import dev.fencing.jdbc.FencedWriter;
import dev.fencing.jdbc.RowKey;
import dev.fencing.jdbc.WriteOutcome;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;

/**
 * The demo's tables, one schema per mode ({@code demo_unfenced}, {@code demo_lease_check}, {@code
 * demo_fenced}):
 *
 * <pre>
 * stock  (sku TEXT PRIMARY KEY, initial_stock INT, stock INT, last_fence_token BIGINT)   -- fenced: protect_table
 * orders (id BIGSERIAL, sku, quantity, token, worker, stock_read, stock_replaced, created_at)
 * </pre>
 *
 * The workload's side of the database: the coordinator creates the tables ({@link #prepare}); workers read
 * through {@link #read} and write through {@link #write}, the two places where the modes differ. The
 * checker does not read through this class: {@link InventoryAudit} reads the same tables with its own SQL,
 * so nothing the workload code gets wrong can hide from the check. Thread-safe.
 */
final class InventoryDatabase {
    private final Jdbi jdbi;
    private final Mode mode;
    private final String schema;
    private FencedWriter fencedWriter;
    private FencedTable fencedStock;

    InventoryDatabase(Jdbi jdbi, Mode mode) {
        this.jdbi = jdbi;
        this.mode = mode;
        this.schema = schemaOf(mode);
    }

    /** {@code demo_unfenced}, {@code demo_lease_check} or {@code demo_fenced}. */
    static String schemaOf(Mode mode) {
        return "demo_" + mode.label().replace('-', '_');
    }

    /** The name of SKU number {@code index} (from 0). */
    static String sku(int index) {
        return "sku-" + (index + 1);
    }

    /** Installs the fencing-db module's {@code fencing} schema (guard trigger, protect_table) if missing. */
    static void migrate(DataSource dataSource) {
        Flyway.configure()
                .dataSource(dataSource)
                .locations("classpath:dev/fencing/db/migration")
                .load()
                .migrate();
    }

    /** Drops and recreates this mode's schema with {@code skus} rows of {@code initialStock} units. */
    void prepare(int skus, int initialStock) {
        jdbi.useTransaction(handle -> {
            handle.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
            handle.execute("CREATE SCHEMA " + schema);
            handle.execute("CREATE TABLE " + schema + ".stock (sku TEXT PRIMARY KEY,"
                    + " initial_stock INT NOT NULL, stock INT NOT NULL, last_fence_token BIGINT NOT NULL DEFAULT 0)");
            handle.execute("CREATE TABLE " + schema + ".orders (id BIGSERIAL PRIMARY KEY, sku TEXT NOT NULL,"
                    + " quantity INT NOT NULL, token BIGINT NOT NULL, worker INT NOT NULL, stock_read INT NOT NULL,"
                    + " stock_replaced INT NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp())");
            for (int i = 0; i < skus; i++) {
                handle.execute(
                        "INSERT INTO " + schema + ".stock (sku, initial_stock, stock) VALUES (?, ?, ?)",
                        sku(i),
                        initialStock,
                        initialStock);
            }
            if (mode == Mode.FENCED) {
                handle.execute("SELECT fencing.protect_table('" + schema + ".stock')");
            }
        });
    }

    /** Opens the fencing-jdbc side (workers of the fenced mode call this once). */
    void openWriter() {
        if (mode == Mode.FENCED) {
            fencedStock = FencedTable.builder()
                    .schema(schema)
                    .table("stock")
                    .keyColumns("sku")
                    .build(jdbi);
            // MONOTONIC: the read claims the row under the lease's token, and the write that follows carries
            // the same token, so it must be admitted by a row that already holds it.
            fencedWriter =
                    FencedWriter.builder(jdbi).policy(FencePolicy.MONOTONIC).build();
        }
    }

    /**
     * What a worker read: the stock, and the outcome of the claim that came with it (always applied when
     * unfenced).
     *
     * @param stock the SKU's stock, or -1 when the claim did not apply (nothing was read)
     */
    record StockRead(WriteOutcome claim, int stock) {}

    /**
     * The stock of {@code sku} now. Unfenced and lease-check: a plain SELECT. Fenced: in one transaction, first claims the
     * row with {@code token} (a fenced UPDATE of its fence column only) and then SELECTs the stock. The
     * claim makes the fence cover the read as well as the write: once a newer holder has read (and claimed)
     * the row, an older holder that is still to write is refused, even if the newer one has not written yet.
     * Without it, a paused holder resumed between the newer holder's read and write would write first,
     * under its own still-higher-than-the-row token, and the newer holder's write would then erase that
     * decrement. If the claim is refused, nothing is read.
     */
    StockRead read(String sku, long token) {
        if (mode != Mode.FENCED) {
            return jdbi.withHandle(handle -> new StockRead(new WriteOutcome.Applied(token), selectStock(handle, sku)));
        }
        return jdbi.inTransaction(handle -> {
            WriteOutcome claim = fencedWriter.tryClaim(handle, fencedStock, RowKey.of(sku), token);
            return claim.isApplied() ? new StockRead(claim, selectStock(handle, sku)) : new StockRead(claim, -1);
        });
    }

    private int selectStock(Handle handle, String sku) {
        return handle.createQuery("SELECT stock FROM " + schema + ".stock WHERE sku = :sku")
                .bind("sku", sku)
                .mapTo(Integer.class)
                .one();
    }

    /**
     * Writes {@code stockRead - quantity} as the SKU's new stock and, if that write took effect, the order
     * row, in one transaction. Unfenced and lease-check: a plain {@code UPDATE ... SET stock = :computed}. Fenced: the same
     * value through fencing-jdbc under {@link FencePolicy#MONOTONIC}: PostgreSQL accepts it when the row still
     * carries this token (the one {@link #read} claimed it with) and refuses it when a newer holder has
     * claimed or written the row since.
     */
    WriteOutcome write(String sku, long token, int worker, int quantity, int stockRead) {
        int newStock = stockRead - quantity;
        return jdbi.inTransaction(handle -> {
            // Bookkeeping for the checker only: what this write is about to replace, under the row lock.
            int replaced = handle.createQuery("SELECT stock FROM " + schema + ".stock WHERE sku = :sku FOR UPDATE")
                    .bind("sku", sku)
                    .mapTo(Integer.class)
                    .one();
            WriteOutcome outcome;
            if (mode == Mode.FENCED) {
                FencedUpdate update = FencedUpdate.builder(fencedStock)
                        .key(sku)
                        .set("stock", newStock)
                        .build();
                outcome = fencedWriter.tryUpdate(handle, update, token);
            } else {
                handle.createUpdate("UPDATE " + schema + ".stock SET stock = :stock WHERE sku = :sku")
                        .bind("stock", newStock)
                        .bind("sku", sku)
                        .execute();
                outcome = new WriteOutcome.Applied(token);
            }
            if (outcome.isApplied()) {
                handle.createUpdate("INSERT INTO " + schema + ".orders"
                                + " (sku, quantity, token, worker, stock_read, stock_replaced)"
                                + " VALUES (:sku, :quantity, :token, :worker, :read, :replaced)")
                        .bind("sku", sku)
                        .bind("quantity", quantity)
                        .bind("token", token)
                        .bind("worker", worker)
                        .bind("read", stockRead)
                        .bind("replaced", replaced)
                        .execute();
            }
            return outcome;
        });
    }

    /** Total units left over all SKUs. */
    int unitsLeft() {
        return jdbi.withHandle(handle -> handle.createQuery("SELECT COALESCE(SUM(stock), 0) FROM " + schema + ".stock")
                .mapTo(Integer.class)
                .one());
    }
}
