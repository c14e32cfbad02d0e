package dev.fencing.verify;

import dev.fencing.harness.ChildJvm;
import dev.fencing.harness.EventBoard;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.IntFunction;

/**
 * The consumer group's member JVMs: the base members that run throughout, crashed (SIGKILL) and started again
 * by the nemesis, and extra members it adds and removes to force rebalances. A base member that stops on its
 * own (an error in its consumer) is noticed by {@link #watch} and started again, and the failure is reported.
 * Thread-safe.
 */
final class ConsumerGroup implements AutoCloseable {
    private static final Duration READY_WAIT = Duration.ofSeconds(60);

    private final IntFunction<ChildJvm> starter;
    private final EventBoard<ClientEvent> board;
    private final int baseMembers;
    private final Map<Integer, ChildJvm> members = new TreeMap<>();
    private final List<String> failures = new ArrayList<>();
    private final boolean[] crashing;
    private int nextExtra;

    /** @param starter starts member {@code id}'s JVM */
    ConsumerGroup(IntFunction<ChildJvm> starter, EventBoard<ClientEvent> board, int baseMembers) {
        this.starter = starter;
        this.board = board;
        this.baseMembers = baseMembers;
        this.crashing = new boolean[baseMembers + 1];
        this.nextExtra = baseMembers + 1;
    }

    /** The members running now (base and extra), for sampling. */
    synchronized List<ChildJvm> members() {
        return List.copyOf(members.values());
    }

    int baseMembers() {
        return baseMembers;
    }

    /** Starts the base members and waits until each is ready. */
    void start() throws InterruptedException {
        for (int id = 1; id <= baseMembers; id++) {
            long mark = board.mark();
            ChildJvm member = starter.apply(id);
            synchronized (this) {
                members.put(id, member);
            }
            awaitReady(member, mark);
        }
    }

    /** SIGKILLs base member {@code id} and starts it again; returns when the new one is ready. */
    void crash(int id) throws InterruptedException {
        ChildJvm old;
        synchronized (this) {
            crashing[id] = true;
            old = members.get(id);
        }
        try {
            old.kill();
            long mark = board.mark();
            ChildJvm fresh = starter.apply(id);
            synchronized (this) {
                members.put(id, fresh);
            }
            awaitReady(fresh, mark);
        } finally {
            synchronized (this) {
                crashing[id] = false;
            }
        }
    }

    /** Adds a member; returns its id once it is ready. */
    int add() throws InterruptedException {
        int id;
        long mark = board.mark();
        ChildJvm member;
        synchronized (this) {
            id = nextExtra++;
            member = starter.apply(id);
            members.put(id, member);
        }
        awaitReady(member, mark);
        return id;
    }

    /** Asks member {@code id} to leave the group and waits until it has exited. */
    void remove(int id) {
        ChildJvm member;
        synchronized (this) {
            member = members.remove(id);
        }
        if (member != null) {
            member.send("STOP");
            if (!member.awaitExit(Duration.ofSeconds(40))) {
                member.kill();
            }
        }
    }

    /**
     * Starts again every base member that exited on its own, and returns a line per such exit (also kept for
     * {@link #failures()}).
     */
    List<String> watch() {
        List<Integer> dead = new ArrayList<>();
        synchronized (this) {
            for (int id = 1; id <= baseMembers; id++) {
                ChildJvm member = members.get(id);
                if (member != null && !member.isAlive() && !crashing[id]) {
                    dead.add(id);
                }
            }
        }
        List<String> lines = new ArrayList<>();
        for (int id : dead) {
            ChildJvm old;
            synchronized (this) {
                old = members.get(id);
            }
            String line = "consumer " + id + " exited on its own (code " + old.exitCode()
                    + "; its log has the reason); started again";
            ChildJvm fresh = starter.apply(id);
            synchronized (this) {
                members.put(id, fresh);
                failures.add(line);
            }
            lines.add(line);
        }
        return lines;
    }

    synchronized List<String> failures() {
        return List.copyOf(failures);
    }

    /** Every member leaves the group; those that do not exit in time are killed. */
    void stop() {
        List<Integer> ids;
        synchronized (this) {
            ids = new ArrayList<>(members.keySet());
        }
        ids.forEach(this::remove);
    }

    private void awaitReady(ChildJvm member, long mark) throws InterruptedException {
        if (board.await(mark, e -> e.child().equals(member.name()) && e.is("READY"), READY_WAIT)
                .isEmpty()) {
            throw new VerifyException(member.name() + " was not ready within " + READY_WAIT.toSeconds() + " s (alive: "
                    + member.isAlive() + "); its log is in the run's logs directory");
        }
    }

    @Override
    public synchronized void close() {
        members.values().forEach(ChildJvm::close);
        members.clear();
    }
}
