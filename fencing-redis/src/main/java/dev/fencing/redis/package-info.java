/**
 * Fenced writes to Redis through Lettuce: Redis applies a write only when it carries a fence token at least
 * as fresh as the one the key last accepted, checked in the same Lua script as the write.
 *
 * <pre>{@code
 * FencedRedis redis = FencedRedis.builder(client.connect()).build();        // FencePolicy.STRICT
 * WriteOutcome outcome = redis.tryDecrementBy("{sku-42}:stock", 3, lease.token());
 * if (outcome instanceof WriteOutcome.Rejected rejected) { ... a newer holder wrote token rejected.storedToken() }
 * }</pre>
 *
 * <ul>
 *   <li>{@link dev.fencing.redis.FencedRedis}: set, hset, delete, guarded increment and the application's
 *       own script, each under a token; {@link dev.fencing.redis.FencedRedisAsync} the same without waiting;
 *   <li>{@link dev.fencing.redis.WriteOutcome}: applied, rejected with the stored token, or guard false;
 *   <li>{@link dev.fencing.redis.FencingRedisException}: what the throwing twins and Redis failures throw;
 *   <li>{@link dev.fencing.FencePolicy}: STRICT ({@code <}) or MONOTONIC ({@code <=}).
 * </ul>
 *
 * Tokens are positive {@code long}s from any monotone source; nothing here depends on ZooKeeper. Redis
 * itself is not a safe token source (see {@link dev.fencing.redis.FencedRedis}).
 */
package dev.fencing.redis;
