/**
 * A Jepsen-style attack on the whole chain (lock, PostgreSQL write, Kafka record, consumer): real faults, a
 * history of every operation written by the client that ran it, and an independent checker ({@link
 * dev.fencing.verify.checker}) that reads only those histories and the database. {@link
 * dev.fencing.verify.VerifyCommand} is the command ({@code verify/run}); {@code VerifyIT} is its CI-sized run. It runs
 * on the harness's coordinator ({@code dev.fencing.harness.Coordinator}) as a {@link
 * dev.fencing.verify.VerifyExperiment}, as {@code demo-inventory} does with its own.
 *
 * <h2>Design</h2>
 *
 * <pre>
 *   coordinator (this JVM)                      writer JVMs 1..C (each in its own network namespace, as root)
 *   ├─ servers: 3-node ZooKeeper ensemble,       loop: lock r (fencing-zookeeper) → append op id to r's row
 *   │  PostgreSQL, Kafka (embedded or given)       (fencing-jdbc: update | upsert | batch | claimAndRun;
 *   ├─ nemesis: one lane per fault kind,           control: plain UPDATE) → publish record (key r, token,
 *   │  schedule drawn from the seed                 value op id) → release; history file per writer
 *   ├─ dead-letter recorder (DLT → table)        consumer member JVMs 1..2 (+ added ones)
 *   └─ checker, reports (table, HTML, JSON)      FencedConsumer + PostgresWatermarkStore, transactional
 *                                                  handler appends op id to the key's applied list
 *                                                  (control: plain poll loop, auto-commit)
 * </pre>
 *
 * <ul>
 *   <li><b>Runs.</b> The fenced run and the control run use the same seed, hence the same workload choices and
 *       the same fault schedule; the control run replaces every fenced path with a plain one. The checker must
 *       find violations in the control run, or it could not have found a failure of fencing either, and the
 *       command fails.
 *   <li><b>Operations and histories.</b> An operation is one lock grant: its append (invoke, then ok, fail or
 *       info) and, if the append was acknowledged, its publish (invoke, then ok or info). Each writer appends
 *       and flushes one JSON line per event to its own file; a writer killed mid-line loses only that line, and
 *       an invoke without a completion is indeterminate. The token of every operation comes from the history,
 *       never from the database.
 *   <li><b>The writer never checks its lease.</b> It plays the holder that keeps going after its session
 *       expired; the resource must refuse what it sends.
 *   <li><b>Faults</b>, each with a start and an end in {@code nemesis.jsonl}: SIGSTOP of a writer that holds its
 *       lock, between lock and write or between write and publish, past its session's expiry and until another
 *       writer wrote (or published) the resource under a newer token (fencing-test-support's {@code ProcessFreezer});
 *       a partition of a writer from ZooKeeper alone, by a blackhole route inside its namespace, while it holds
 *       its lock, until another writer wrote the resource ({@code NetworkNamespace}); the ensemble's leader
 *       stopped and restarted; a writer's backend terminated inside its write's transaction ({@code
 *       PostgresBackends}); a consumer member SIGKILLed and started again; a member added and removed. A
 *       pause or partition counts only if another writer took the lock over meanwhile, which proves the
 *       session expired. Faults of one kind follow one another (pauses overlap, up to half the writers); a
 *       kind stops once the workload time is over and its minimum is reached.
 *   <li><b>Waiting on conditions, not times.</b> Faults wait for the writer's report that it stands at the
 *       planned point, for the takeover, for the consumer's readiness; the end waits until the consumers have
 *       consumed every record (the store's offsets, or Kafka's for the control run) and the dead letters are
 *       copied.
 *   <li><b>Resources.</b> {@code --resource postgres} (the default) is the chain above. {@code --resource redis}
 *       replaces PostgreSQL, Kafka and the consumers by Redis: each operation sets its resource's value key
 *       through fencing-redis (a fenced script that also appends to the resource's log, or a fenced SET), checked
 *       by {@link dev.fencing.verify.checker.RedisChecker} from the histories and Redis's final state; pauses,
 *       partitions and leader kills apply. A resource besides the chain is a {@code Workload} here, a {@code
 *       client.WriterWorkload} in the writers, a checker, and a {@code Resource} constant.
 *   <li><b>Cleanup.</b> Children exit when their standard input ends (the coordinator died); a frozen child is
 *       thawed by its resumer; a watchdog process stops the embedded PostgreSQL, deletes the namespaces and the
 *       data directory if the coordinator is killed outright; namespaces and data directories of dead runs are
 *       removed at the next start.
 * </ul>
 */
package dev.fencing.verify;
