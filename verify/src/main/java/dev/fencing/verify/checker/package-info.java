/**
 * The history checker: it reads what the clients recorded and what the run left in the database, and says
 * which safety properties broke, naming the operations. Like Jepsen's checkers it trusts no log and knows
 * nothing of the system's code: this package imports only the JDK (a test enforces it), so a bug in the
 * toolkit or in the workload cannot hide in shared code.
 *
 * <h2>The history format</h2>
 *
 * One file per client ({@code client-<n>.jsonl}), UTF-8, one flat JSON object per line, written and flushed as
 * each event happens, a line and its newline in one write (a client killed outright loses at most its last line, and
 * leaves at most a part of it without its newline: {@link dev.fencing.verify.checker.History} leaves such a torn
 * last line out and names it; any other unreadable line makes the history unusable):
 *
 * <pre>
 * {"type":"invoke","f":"append","op":3000017,"client":3,"resource":"r2","token":45,"time":1712345678901,"path":"update"}
 * {"type":"ok","f":"append","op":3000017,"client":3,"resource":"r2","token":45,"time":1712345678907}
 * {"type":"invoke","f":"publish","op":3000017,"client":3,"resource":"r2","token":45,"time":1712345678908,"stamped":true}
 * {"type":"ok","f":"publish","op":3000017,"client":3,"resource":"r2","token":45,"time":1712345678913,"partition":1,"offset":88}
 * </pre>
 *
 * <ul>
 *   <li>{@code type}: {@code invoke}, then one of {@code ok} (done and acknowledged), {@code fail} (definitely
 *       not done: refused), {@code info} (indeterminate). An invoke without a completion is indeterminate; a client
 *       runs one operation at a time, so only the last operation of its file can lack one.
 *   <li>{@code f}: {@code append} (append {@code op} to the resource's list, under the lock grant's token) or
 *       {@code publish} (a record keyed by the resource carrying {@code op}, stamped with the token unless
 *       {@code "stamped":false}).
 *   <li>{@code op}: unique in the run; {@code token}: the fence token of the grant the operation ran under;
 *       {@code time}: epoch milliseconds; {@code error}: the reason of a {@code fail} or {@code info}.
 * </ul>
 *
 * <h2>The database contract</h2>
 *
 * In one schema: {@code resources(resource, ids BIGINT[])}, the list each resource's row holds, in append
 * order; {@code applied(record_key, ids BIGINT[])}, the ids the consumers applied per key, in the order they
 * applied them; {@code dead_letters(origin_partition, origin_offset, record_key, op, reason, detail)}, the
 * records the consumers refused. A NULL in any of these but a dead letter's {@code op} and {@code detail} makes the
 * tables unusable, naming the table and the row. See {@link dev.fencing.verify.checker.Observed}.
 *
 * <h2>What is checked</h2>
 *
 * See {@link dev.fencing.verify.checker.Checker}: token order, no duplicates, no unknown ids, nothing
 * acknowledged lost and nothing refused present, per resource list and per applied list.
 *
 * <h2>The redis resource</h2>
 *
 * The same history format (appends only, the invoke written just before the write is sent), and instead of the
 * tables each resource's log, value and stored token as read from Redis ({@link
 * dev.fencing.verify.checker.RedisState}); {@link dev.fencing.verify.checker.RedisChecker} checks the log's token
 * order, stale writes by real time, the final value and the stored token.
 *
 * <h2>The election resource</h2>
 *
 * The same appends (their lists in the same {@code resources} table), and between them two more kinds of line,
 * {@link dev.fencing.verify.checker.TermEvent}s: a participant's term grant ({@code "f":"grant"}) and, before each
 * write, what its check of the term's validity answered ({@code "f":"check"}, {@code "valid":true|false}, the time
 * when the check began; it follows its term's grant in the participant's file). {@link
 * dev.fencing.verify.checker.ElectionChecker} checks the lists' term order (non-decreasing: a term writes many times)
 * and, apart from the fence, the local contract: no term read valid after the next term's grant ({@link
 * dev.fencing.verify.checker.ViolationKind#LOCAL_VALIDITY}), no term granted to two participants ({@link
 * dev.fencing.verify.checker.ViolationKind#TERM_GRANTED_TWICE}), and no term granted to a participant that joined
 * again after its last term's last line, later than a greater term's grant ({@link
 * dev.fencing.verify.checker.ViolationKind#TERM_ORDER}).
 *
 * <h2>The read/write-lock resource</h2>
 *
 * The same appends (writes under write grants, their lists in the same {@code resources} table), and reads
 * ({@code "f":"read"}, an invoke and a completion like an append's; an {@code ok} read carries {@code "seen"}, how
 * many ids of the list it saw), see {@link dev.fencing.verify.checker.Read}. {@link
 * dev.fencing.verify.checker.RwLockChecker} checks the lists as the chain's and, from the histories, that no read
 * was returned without a write acknowledged before it ({@link dev.fencing.verify.checker.ViolationKind#STALE_READ}),
 * that no write landed under a read grant's token ({@link dev.fencing.verify.checker.ViolationKind#READ_TOKEN_WRITE})
 * and that no read saw what the lists cannot explain ({@link
 * dev.fencing.verify.checker.ViolationKind#UNEXPLAINED_READ}).
 */
package dev.fencing.verify.checker;
