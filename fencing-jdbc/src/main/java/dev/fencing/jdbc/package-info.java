/**
 * Fenced writes to PostgreSQL through Jdbi: the database applies a write only when it carries a fence
 * token at least as fresh as the one the row (or watermark) last accepted, checked in the same statement
 * as the write.
 *
 * <pre>{@code
 * // once: the fencing-db module's migrations (classpath:dev/fencing/db/migration; docs/jdbc.md's Flyway recipes), then
 * // in a migration of the service's:   SELECT fencing.protect_table('inventory');
 * FencedTable inventory = FencedTable.builder().table("inventory").keyColumns("sku").build(jdbi);
 * FencedWriter writer = FencedWriter.builder(jdbi).build();           // FencePolicy.STRICT
 *
 * FencedUpdate take = FencedUpdate.builder(inventory).key("A-1")
 *         .setExpression("stock", "stock - :qty").where("stock >= :qty").bind("qty", 1).build();
 * WriteOutcome outcome = writer.tryUpdate(take, lease.token());
 * if (outcome instanceof WriteOutcome.Rejected rejected) { ... a newer holder wrote token rejected.storedToken() }
 * }</pre>
 *
 * <ul>
 *   <li>{@link dev.fencing.jdbc.FencedTable}: a protected table, checked against the database once;
 *   <li>{@link dev.fencing.jdbc.FencedUpdate}, {@link dev.fencing.jdbc.FencedUpsert}, {@link
 *       dev.fencing.jdbc.FencedBatch}: what to write;
 *   <li>{@link dev.fencing.jdbc.FencedWriter}: runs them under a token (also claim-then-run and
 *       watermark-then-run, whose statements commit with the fenced write) and returns a {@link dev.fencing.jdbc.WriteOutcome}, or throws a {@link
 *       dev.fencing.jdbc.FencedJdbcException};
 *   <li>{@link dev.fencing.FencePolicy}: STRICT ({@code <}) or MONOTONIC ({@code <=}).
 * </ul>
 *
 * Tokens are positive {@code long}s from any monotone source; nothing here depends on ZooKeeper.
 */
package dev.fencing.jdbc;
