package dev.fencing.bench;

import dev.fencing.lock.FencedLock;
import dev.fencing.lock.Lease;
import dev.fencing.lock.etcd.EtcdLocks;
import dev.fencing.testsupport.EtcdEndpoint;
import dev.fencing.testsupport.EtcdServers;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.Lock;
import io.etcd.jetcd.lock.LockResponse;
import io.etcd.jetcd.options.CompactOption;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * fencing-etcd's {@link EtcdLocks} against jetcd's own {@code Lock} client on the same etcd: uncontended
 * acquire+release on one client, and 8 clients (8 jetcd clients, 8 {@code EtcdLocks}) contending for one lock.
 *
 * <p>Both sides do what one grant needs on etcd: the raw side grants an etcd lease (TTL {@value #TTL_SECONDS} s),
 * calls {@code lock(name, lease)} (etcd's lock service runs the mutex recipe on the server) and, on release,
 * {@code unlock(key)} and a revoke of the lease that it does not wait for; the fenced side grants a lease per
 * acquire too, creates its key in a transaction that also reads the first contender (a waiter then reads its
 * predecessor and watches it, from the client), registers its key with its {@code EtcdLocks}' one watch of the
 * prefix (opened once, not per grant) and schedules keep-alives, and on release revokes the lease and waits for
 * the answer (etcd deletes the key with its lease, so the raw side's unlock and revoke are one request here; each
 * side waits for three answers per acquire+release). Each case also prints what etcd counted per
 * acquire+release on each side ({@link EtcdRequestCounts}). Uses the
 * embedded member, or {@code FENCING_ETCD_ENDPOINTS}.
 *
 * <p>Run: {@code bench/run etcd [rounds] [uncontendedOps] [contendedOpsPerClient]}.
 */
public final class EtcdBenchmark {
    private static final int CLIENTS = 8;
    private static final long TTL_SECONDS = 10;

    private EtcdBenchmark() {}

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 9;
        int uncontendedOps = args.length > 1 ? Integer.parseInt(args[1]) : 2000;
        int contendedOpsPerClient = args.length > 2 ? Integer.parseInt(args[2]) : 40;

        try (EtcdEndpoint etcd = EtcdServers.start()) {
            String prefix = "bench/" + System.nanoTime();
            List<Client> clients = new ArrayList<>();
            List<EtcdLocks> fencedLocks = new ArrayList<>();
            for (int i = 0; i < CLIENTS; i++) {
                Client client = Client.builder()
                        .endpoints(etcd.endpoints().toArray(String[]::new))
                        .build();
                clients.add(client);
                fencedLocks.add(EtcdLocks.builder(client)
                        .prefix(prefix + "/fenced")
                        .leaseTtl(Duration.ofSeconds(TTL_SECONDS))
                        .build());
            }
            try {
                // a fresh member's answers still speed up for the first seconds: three warm-up rounds
                AlternatingRuns runs = new AlternatingRuns(rounds, 3);
                Client settler = clients.get(0);
                // every member counts what it handled; with one member (the embedded default) that is all of it
                String member = etcd.endpoints().get(0);
                EtcdRequestCounts rawCounts = new EtcdRequestCounts(member);
                EtcdRequestCounts fencedCounts = new EtcdRequestCounts(member);

                RawLock rawSingle = new RawLock(clients.get(0), prefix + "/raw/uncontended");
                FencedLock fencedSingle = fencedLocks.get(0).lock("uncontended");
                runs.compare(
                        "uncontended acquire+release, 1 client",
                        settledFirst(
                                settler,
                                etcd,
                                () -> rawCounts.count(
                                        uncontendedOps,
                                        () -> LockBenchmark.timed(uncontendedOps, () -> {
                                            for (int i = 0; i < uncontendedOps; i++) {
                                                rawSingle.release(rawSingle.acquire());
                                            }
                                            return null;
                                        }))),
                        settledFirst(
                                settler,
                                etcd,
                                () -> fencedCounts.count(
                                        uncontendedOps,
                                        () -> LockBenchmark.timed(uncontendedOps, () -> {
                                            long sink = 0;
                                            for (int i = 0; i < uncontendedOps; i++) {
                                                try (Lease lease = fencedSingle.acquire()) {
                                                    sink += lease.token();
                                                }
                                            }
                                            return sink;
                                        }))));
                System.out.println();
                System.out.println("etcd's own counts, " + runs.results().get(0).name() + " (requests by method,"
                        + " streams opened for Watch and LeaseKeepAlive):");
                rawCounts.print(System.out, "raw");
                fencedCounts.print(System.out, "fenced");
                EtcdRequestCounts rawContendedCounts = new EtcdRequestCounts(member);
                EtcdRequestCounts fencedContendedCounts = new EtcdRequestCounts(member);

                List<RawLock> rawShared = new ArrayList<>();
                List<FencedLock> fencedShared = new ArrayList<>();
                for (int i = 0; i < CLIENTS; i++) {
                    rawShared.add(new RawLock(clients.get(i), prefix + "/raw/contended"));
                    fencedShared.add(fencedLocks.get(i).lock("contended"));
                }
                ExecutorService pool = Executors.newFixedThreadPool(CLIENTS);
                int contendedOps = CLIENTS * contendedOpsPerClient;
                runs.compare(
                        "contended acquire+release, " + CLIENTS + " clients",
                        settledFirst(
                                settler,
                                etcd,
                                () -> rawContendedCounts.count(
                                        contendedOps,
                                        () -> LockBenchmark.timed(
                                                contendedOps,
                                                () -> LockBenchmark.inParallel(pool, rawShared.size(), c -> {
                                                    RawLock lock = rawShared.get(c);
                                                    for (int i = 0; i < contendedOpsPerClient; i++) {
                                                        lock.release(lock.acquire());
                                                    }
                                                })))),
                        settledFirst(
                                settler,
                                etcd,
                                () -> fencedContendedCounts.count(
                                        contendedOps,
                                        () -> LockBenchmark.timed(
                                                contendedOps,
                                                () -> LockBenchmark.inParallel(pool, fencedShared.size(), c -> {
                                                    FencedLock lock = fencedShared.get(c);
                                                    for (int i = 0; i < contendedOpsPerClient; i++) {
                                                        try (Lease lease = lock.acquire()) {
                                                            lease.token();
                                                        }
                                                    }
                                                })))));
                pool.shutdown();
                System.out.println("etcd's own counts, " + runs.results().get(1).name() + ":");
                rawContendedCounts.print(System.out, "raw");
                fencedContendedCounts.print(System.out, "fenced");

                System.out.println();
                System.out.println("fencing-etcd EtcdLocks vs raw jetcd Lock, same etcd (" + etcd.endpoints()
                        + "), ops = acquire+release pairs");
                System.out.println("  raw:    lease grant (TTL " + TTL_SECONDS + " s), lock(name, lease), unlock(key),"
                        + " revoke (not waited for)");
                System.out.println(
                        "  fenced: lease grant (TTL " + TTL_SECONDS + " s), txn creating the key and reading the"
                                + " first contender (a waiter: predecessor txn and watch), own key reported by the"
                                + " locks' one prefix watch, keep-alives scheduled; revoke (the key goes with the"
                                + " lease)");
                runs.printTable(System.out);
                System.out.printf(Locale.ROOT, "etcd fenced/raw throughput ratio: %.2f%n", runs.lowestRatio());
            } finally {
                fencedLocks.forEach(EtcdLocks::close);
                clients.forEach(Client::close);
            }
        }
    }

    /** The round, after {@link #settle} (untimed). */
    private static AlternatingRuns.Round settledFirst(Client client, EtcdEndpoint etcd, AlternatingRuns.Round round) {
        return () -> {
            settle(client, etcd.endpoints());
            return round.opsPerSecond();
        };
    }

    /**
     * Compacts etcd's history up to now and defragments the member, untimed, before each round: every
     * acquire+release leaves revisions behind, and without this a member's answers slow down round by round (to a
     * third of the first rounds' rate over a few minutes here), so that later rounds would measure the history left
     * by earlier ones rather than the side being run.
     */
    private static void settle(Client client, List<String> endpoints) throws Exception {
        long revision = client.getKVClient()
                .get(ByteSequence.from("bench/settle", StandardCharsets.UTF_8))
                .get()
                .getHeader()
                .getRevision();
        client.getKVClient()
                .compact(
                        revision,
                        CompactOption.builder().withCompactPhysical(true).build())
                .get();
        for (String endpoint : endpoints) {
            client.getMaintenanceClient().defragmentMember(endpoint).get();
        }
    }

    /** jetcd's lock recipe as its documentation gives it: a lease of its own per acquire, revoked on release. */
    private static final class RawLock {
        private final Client client;
        private final Lock lockClient;
        private final ByteSequence name;

        RawLock(Client client, String name) {
            this.client = client;
            this.lockClient = client.getLockClient();
            this.name = ByteSequence.from(name, StandardCharsets.UTF_8);
        }

        Held acquire() throws Exception {
            long leaseId = client.getLeaseClient().grant(TTL_SECONDS).get().getID();
            LockResponse locked = lockClient.lock(name, leaseId).get();
            return new Held(locked.getKey(), leaseId);
        }

        void release(Held held) throws Exception {
            lockClient.unlock(held.key()).get();
            client.getLeaseClient().revoke(held.leaseId());
        }
    }

    private record Held(ByteSequence key, long leaseId) {}
}
