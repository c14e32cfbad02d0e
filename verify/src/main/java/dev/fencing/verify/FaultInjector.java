package dev.fencing.verify;

import dev.fencing.harness.EventBoard;
import dev.fencing.harness.PauseInjector;
import dev.fencing.testsupport.EmbeddedEtcdCluster;
import dev.fencing.testsupport.EmbeddedZooKeeperEnsemble;
import dev.fencing.testsupport.EtcdMember;
import dev.fencing.testsupport.NetworkNamespace;
import dev.fencing.testsupport.PostgresBackends;
import dev.fencing.verify.client.PausePoint;
import java.time.Duration;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.function.Predicate;
import javax.sql.DataSource;
import org.apache.curator.test.InstanceSpec;

/**
 * How each fault is done, one call per fault, each returning only when its fault is over (the writer thawed,
 * the network healed, the server or consumer back) and logged. Thread-safe: the nemesis calls it from a thread
 * per fault kind, and pauses from several threads; a writer takes one fault at a time.
 */
final class FaultInjector {
    private static final Duration POINT_WAIT = Duration.ofSeconds(5);
    private static final Duration TRANSACTION_POINT_WAIT = Duration.ofSeconds(8);

    private final Writers writers;
    private final ConsumerGroup consumers;
    private final EventBoard<ClientEvent> board;
    private final FaultLog log;
    private final EmbeddedZooKeeperEnsemble ensemble;
    private final EmbeddedEtcdCluster etcd;
    private final String lockService;
    private final VerifyNetwork network;
    private final DataSource database;
    private final Duration pause;
    private final Duration takeoverWait;
    private final Resource resource;
    /** How many consumer crashes were injected: read and raised by the nemesis's one consumer-crash lane. */
    private int consumerCrashes;

    /**
     * @param ensemble the ZooKeeper ensemble whose leader a leader kill stops, or null
     * @param etcd the etcd cluster whose leader a leader kill kills instead, or null
     * @param grantedSession the session timeout ZooKeeper grants the writers, or the TTL of their etcd leases: a
     *     pause lasts a second longer, and then until another writer has taken the resource over (at most {@code
     *     grantedSession} + 3 s more)
     * @param database the run's database, for backend kills; null for a resource without one
     * @param resource what the writers write: a resource that publishes no record is paused between lock and write
     *     only
     */
    FaultInjector(
            Writers writers,
            ConsumerGroup consumers,
            EventBoard<ClientEvent> board,
            FaultLog log,
            EmbeddedZooKeeperEnsemble ensemble,
            EmbeddedEtcdCluster etcd,
            VerifyNetwork network,
            DataSource database,
            Duration grantedSession,
            Resource resource) {
        this.writers = writers;
        this.consumers = consumers;
        this.board = board;
        this.log = log;
        this.ensemble = ensemble;
        this.etcd = etcd;
        this.lockService = etcd != null ? LockService.ETCD.displayName() : LockService.ZOOKEEPER.displayName();
        this.network = network;
        this.database = database;
        this.pause = grantedSession.plusSeconds(1);
        this.takeoverWait = grantedSession.plusSeconds(3);
        this.resource = resource;
    }

    void inject(FaultSchedule.Planned planned) throws InterruptedException {
        switch (planned.kind()) {
            case PAUSE, READ_PAUSE -> pause(planned);
            case PARTITION -> partition(planned);
            case LEADER_KILL -> {
                if (etcd != null) {
                    etcdLeaderKill();
                } else {
                    leaderKill();
                }
            }
            case BACKEND_KILL -> backendKill(planned);
            case CONSUMER_CRASH -> consumerCrash();
            case REBALANCE -> rebalance();
            case SESSION_EXPIRY -> sessionExpiry(planned);
        }
    }

    /**
     * Freezes a writer holding its lock (before its write, or between write and publish; a read pause: a reader
     * between its read and its return) with SIGSTOP, past its session's expiry and until another writer has written
     * (or published) the resource under a newer token, then thaws it: its write, record or read is now stale. A
     * pause counts once another client took the lock over; a read pause only once a writer wrote meanwhile.
     */
    private void pause(FaultSchedule.Planned planned) throws InterruptedException {
        OptionalInt reserved = writers.reserve(planned.target(), true);
        if (reserved.isEmpty()) {
            return;
        }
        int id = reserved.getAsInt();
        try {
            // the same schedule for every resource: without a record there is nothing between write and publish
            PausePoint point = planned.kind() == FaultKind.READ_PAUSE
                    ? PausePoint.READ_USE
                    : resource.chain() ? planned.point() : PausePoint.LOCK_WRITE;
            Optional<ClientEvent> at = writers.armAndAwait(id, point, POINT_WAIT);
            long start = System.currentTimeMillis();
            if (at.isEmpty()) {
                log.add(new Fault(
                        planned.kind(),
                        "writer " + id,
                        id,
                        start,
                        start,
                        false,
                        "did not reach " + where(point) + " within " + POINT_WAIT.toSeconds() + " s"));
                return;
            }
            String resource = at.get().field(1);
            long token = at.get().number(2);
            long mark = board.mark();
            String takeover = point == PausePoint.WRITE_PUBLISH ? "PUBLISHED" : "WRITTEN";
            PauseInjector.Pause<ClientEvent> pause = writers.pauses()
                    .freezeUntilTakenOver(
                            id,
                            this.pause,
                            takeoverWait,
                            () -> {},
                            wait -> board.await(mark, newer(takeover, resource, token), wait));
            start = pause.startMillis();
            long end = pause.endMillis();
            Optional<ClientEvent> locked = point == PausePoint.READ_USE
                    ? pause.takeover()
                    : board.find(mark, newer("LOCKED", resource, token));
            String meanwhile = point == PausePoint.READ_USE ? " wrote with token " : " took the lock with token ";
            log.add(new Fault(
                    planned.kind(),
                    "writer " + id,
                    id,
                    start,
                    end,
                    locked.isPresent(),
                    String.format(
                            Locale.ROOT,
                            "SIGSTOP %.1fs holding %s token %d %s; %s",
                            (end - start) / 1000.0,
                            resource,
                            token,
                            where(point),
                            locked.map(e -> "meanwhile " + e.child() + meanwhile + e.token())
                                    .orElse(
                                            point == PausePoint.READ_USE
                                                    ? "nobody wrote " + resource
                                                    : "nobody took " + resource + " over"))));
        } finally {
            writers.release(id);
        }
    }

    /**
     * Cuts a writer holding its lock off the lock service alone (ZooKeeper or etcd; PostgreSQL and Kafka stay reachable) until its session
     * expired and another writer wrote the resource, then lets it write, publish and release as if nothing
     * happened, then heals.
     */
    private void partition(FaultSchedule.Planned planned) throws InterruptedException {
        OptionalInt reserved = writers.reserve(planned.target(), true);
        if (reserved.isEmpty()) {
            return;
        }
        int id = reserved.getAsInt();
        NetworkNamespace namespace = network.client(id);
        try {
            Optional<ClientEvent> at = writers.armAndAwait(id, PausePoint.LOCK_WRITE, POINT_WAIT);
            long start = System.currentTimeMillis();
            if (at.isEmpty()) {
                log.add(new Fault(
                        FaultKind.PARTITION,
                        "writer " + id,
                        id,
                        start,
                        start,
                        false,
                        "did not reach " + where(PausePoint.LOCK_WRITE) + " within " + POINT_WAIT.toSeconds() + " s"));
                return;
            }
            String resource = at.get().field(1);
            long token = at.get().number(2);
            long mark = board.mark();
            start = System.currentTimeMillis();
            Optional<ClientEvent> done;
            try {
                namespace.cut(network.lockAddress());
                board.await(mark, newer("WRITTEN", resource, token), takeoverWait.multipliedBy(2));
                writers.get(id).send("GO");
                // its late write and publish are done; releasing the lock waits for the lock service, so heal first
                done = board.await(
                        mark,
                        e -> e.child().equals(writers.get(id).name()) && e.is("EFFECTS") && e.token() == token,
                        Duration.ofSeconds(30));
            } finally {
                namespace.heal(network.lockAddress());
            }
            long end = System.currentTimeMillis();
            Optional<ClientEvent> locked = board.find(mark, newer("LOCKED", resource, token));
            Optional<ClientEvent> outcome = board.find(
                    mark,
                    e -> e.child().equals(writers.get(id).name())
                            && (e.is("WRITTEN") || e.is("REFUSED") || e.is("UNKNOWN"))
                            && e.token() == token);
            log.add(new Fault(
                    FaultKind.PARTITION,
                    "writer " + id,
                    id,
                    start,
                    end,
                    locked.isPresent(),
                    String.format(
                            Locale.ROOT,
                            "cut from %s %.1fs holding %s token %d; %s; its late write: %s%s",
                            lockService,
                            (end - start) / 1000.0,
                            resource,
                            token,
                            locked.map(e -> "meanwhile " + e.child() + " took the lock with token " + e.token())
                                    .orElse("nobody took " + resource + " over"),
                            outcome.map(e -> e.kind().toLowerCase(Locale.ROOT)).orElse("none seen"),
                            done.isPresent() ? "" : " (not done within 30 s)")));
        } finally {
            writers.release(id);
        }
    }

    /** Stops the ensemble's leader, waits for another to be elected, and starts it again. */
    private void leaderKill() throws InterruptedException {
        Optional<InstanceSpec> leader = Optional.empty();
        for (int i = 0; i < 50 && leader.isEmpty(); i++) {
            leader = ensemble.leader();
            if (leader.isEmpty()) {
                Thread.sleep(100);
            }
        }
        long start = System.currentTimeMillis();
        if (leader.isEmpty()) {
            log.add(new Fault(FaultKind.LEADER_KILL, "ZooKeeper", 0, start, start, false, "no leader to kill"));
            return;
        }
        InstanceSpec old = leader.get();
        ensemble.stop(old);
        Optional<InstanceSpec> next = Optional.empty();
        long deadline = System.currentTimeMillis() + 20_000;
        while (System.currentTimeMillis() < deadline) {
            next = ensemble.leader().filter(spec -> spec.getServerId() != old.getServerId());
            if (next.isPresent()) {
                break;
            }
            Thread.sleep(200);
        }
        long elected = System.currentTimeMillis();
        Thread.sleep(Math.max(0, start + 2_000 - System.currentTimeMillis()));
        ensemble.restart(old);
        long end = System.currentTimeMillis();
        log.add(new Fault(
                FaultKind.LEADER_KILL,
                "ZooKeeper server " + old.getServerId(),
                0,
                start,
                end,
                next.isPresent(),
                next.map(spec -> String.format(
                                Locale.ROOT,
                                "leader stopped; server %d elected after %.1fs; restarted",
                                spec.getServerId(),
                                (elected - start) / 1000.0))
                        .orElse("leader stopped; no new leader within 20 s; restarted")));
    }

    /**
     * Kills the etcd cluster's leader member (SIGKILL), waits for another to be elected, and starts it again (same
     * data directory: it rejoins as a follower). The writers' etcd leases outlive it: a new leader renews every
     * lease it inherits.
     */
    private void etcdLeaderKill() throws InterruptedException {
        long start = System.currentTimeMillis();
        EtcdMember old;
        try {
            old = etcd.awaitLeader(Duration.ofSeconds(5));
        } catch (IllegalStateException e) {
            log.add(new Fault(FaultKind.LEADER_KILL, "etcd", 0, start, start, false, "no leader to kill"));
            return;
        }
        long killed = System.currentTimeMillis();
        old.kill();
        Optional<EtcdMember> next = Optional.empty();
        try {
            next = Optional.of(etcd.awaitLeader(Duration.ofSeconds(20))).filter(member -> member != old);
        } catch (IllegalStateException e) {
            // started again below all the same
        }
        long elected = System.currentTimeMillis();
        Thread.sleep(Math.max(0, killed + 2_000 - System.currentTimeMillis()));
        String failedRestart = null;
        try {
            old.start();
        } catch (RuntimeException e) {
            failedRestart = "not started again: " + e.getMessage();
        }
        long end = System.currentTimeMillis();
        boolean back = failedRestart == null;
        String restart = back ? "started again" : failedRestart;
        String detail = next.map(member -> String.format(
                        Locale.ROOT,
                        "leader killed; %s elected after %.1fs; %s",
                        member.name(),
                        (elected - killed) / 1000.0,
                        restart))
                .orElse("leader killed; no new leader within 20 s; " + restart);
        log.add(new Fault(
                FaultKind.LEADER_KILL, "etcd member " + old.name(), 0, killed, end, next.isPresent() && back, detail));
    }

    /**
     * Expires the session of a writer that leads (found at its point between check and write, and sent on at once)
     * while it goes on writing under its term: on even faults on the client side, as Curator's {@code KillSession}
     * does (Curator replaces its handle, and closing the old one ends the session on the server, which elects the
     * next participant up to a few hundred milliseconds before Curator reports LOST), on odd ones on the server at
     * once (the client learns of it at its next contact). Counted once another writer (not the expired one, joining
     * again) took the resource over.
     */
    private void sessionExpiry(FaultSchedule.Planned planned) throws InterruptedException {
        OptionalInt reserved = writers.reserve(planned.target(), true);
        if (reserved.isEmpty()) {
            return;
        }
        int id = reserved.getAsInt();
        String side = planned.index() % 2 == 0 ? "client" : "server";
        try {
            Optional<ClientEvent> at = writers.armAndAwait(id, PausePoint.LOCK_WRITE, POINT_WAIT);
            long start = System.currentTimeMillis();
            if (at.isEmpty()) {
                log.add(new Fault(
                        FaultKind.SESSION_EXPIRY,
                        "writer " + id,
                        id,
                        start,
                        start,
                        false,
                        "did not reach " + where(PausePoint.LOCK_WRITE) + " within " + POINT_WAIT.toSeconds() + " s"));
                return;
            }
            String resource = at.get().field(1);
            long token = at.get().number(2);
            long mark = board.mark();
            writers.get(id).send("EXPIRE " + side);
            writers.get(id).send("GO");
            Optional<ClientEvent> expired = board.await(
                    mark, e -> e.child().equals(writers.get(id).name()) && e.is("EXPIRED"), Duration.ofSeconds(15));
            String name = writers.get(id).name();
            Optional<ClientEvent> locked = board.await(
                    mark, newer("LOCKED", resource, token).and(e -> !e.child().equals(name)), takeoverWait);
            long end = System.currentTimeMillis();
            log.add(new Fault(
                    FaultKind.SESSION_EXPIRY,
                    "writer " + id,
                    id,
                    start,
                    end,
                    locked.isPresent(),
                    String.format(
                            Locale.ROOT,
                            "session expired on the %s side holding %s token %d, writing on%s; %s",
                            side,
                            resource,
                            token,
                            expired.map(e -> e.field(0).equals("failed") ? " (the expiry failed: see its log)" : "")
                                    .orElse(" (no word from the writer)"),
                            locked.map(e -> "then " + e.child() + " took the lock with token " + e.token())
                                    .orElse("nobody took " + resource + " over"))));
        } finally {
            writers.release(id);
        }
    }

    /** Terminates a writer's PostgreSQL backend inside its write's transaction, before the commit. */
    private void backendKill(FaultSchedule.Planned planned) throws InterruptedException {
        OptionalInt reserved = writers.reserve(planned.target(), false);
        if (reserved.isEmpty()) {
            return;
        }
        int id = reserved.getAsInt();
        try {
            Optional<ClientEvent> at = writers.armAndAwait(id, PausePoint.IN_TRANSACTION, TRANSACTION_POINT_WAIT);
            long start = System.currentTimeMillis();
            if (at.isEmpty()) {
                log.add(new Fault(
                        FaultKind.BACKEND_KILL,
                        "writer " + id,
                        id,
                        start,
                        start,
                        false,
                        "no write reached its commit within " + TRANSACTION_POINT_WAIT.toSeconds() + " s"));
                return;
            }
            int pid = (int) at.get().number(3);
            boolean killed;
            String detail;
            try {
                killed = PostgresBackends.terminate(database, pid);
                detail = killed ? "" : " (no such backend)";
            } catch (IllegalStateException e) {
                killed = false;
                detail = " (" + e.getMessage() + ")";
            } finally {
                writers.get(id).send("GO");
            }
            long end = System.currentTimeMillis();
            log.add(new Fault(
                    FaultKind.BACKEND_KILL,
                    "writer " + id,
                    id,
                    start,
                    end,
                    killed,
                    "backend " + pid + " terminated in the transaction writing "
                            + at.get().field(1) + " under token " + at.get().number(2) + detail));
        } finally {
            writers.release(id);
        }
    }

    /**
     * SIGKILLs a base consumer member and starts it again: the base members in turn, so that two crashes hit
     * two members.
     */
    private void consumerCrash() throws InterruptedException {
        int member = 1 + consumerCrashes++ % consumers.baseMembers();
        long start = System.currentTimeMillis();
        boolean back = true;
        String detail = "SIGKILL, started again";
        try {
            consumers.crash(member);
        } catch (VerifyException e) {
            back = false;
            detail = "SIGKILL; " + e.getMessage();
        }
        log.add(new Fault(
                FaultKind.CONSUMER_CRASH, "consumer " + member, 0, start, System.currentTimeMillis(), back, detail));
    }

    /** Adds a member to the group (a rebalance), lets it work a while, and removes it (another). */
    private void rebalance() throws InterruptedException {
        long start = System.currentTimeMillis();
        int id;
        try {
            id = consumers.add();
        } catch (VerifyException e) {
            log.add(new Fault(
                    FaultKind.REBALANCE, "consumer", 0, start, System.currentTimeMillis(), false, e.getMessage()));
            return;
        }
        Thread.sleep(10_000);
        consumers.remove(id);
        log.add(new Fault(
                FaultKind.REBALANCE,
                "consumer " + id,
                0,
                start,
                System.currentTimeMillis(),
                true,
                "member " + id + " joined the group, worked 10s and left"));
    }

    private static Predicate<ClientEvent> newer(String kind, String resource, long token) {
        return e -> e.is(kind) && e.resource().equals(resource) && e.token() > token;
    }

    private static String where(PausePoint point) {
        return switch (point) {
            case LOCK_WRITE -> "between lock and write";
            case WRITE_PUBLISH -> "between write and publish";
            case IN_TRANSACTION -> "inside its write's transaction";
            case READ_USE -> "between its read and the read's return";
        };
    }
}
