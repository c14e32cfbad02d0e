package dev.fencing.harness;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntFunction;

/**
 * The child JVMs of one mode's run, numbered from 1, as a coordinator drives them: each registered with {@link
 * ExitCleanup} from its start (Ctrl-C stops them all), told {@code START} together, and at the end told {@code STOP}
 * with a time to finish, after which a child still running is killed. Thread-safe: the list is fixed at the start.
 *
 * <pre>{@code
 * try (ChildFleet workers = ChildFleet.start(4, id -> ChildJvm.start("worker " + id, id, ...))) {
 *     workers.send("START");
 *     ...
 *     workers.stop(Duration.ofSeconds(30)).forEach(late -> progress.println(late.name() + " was killed"));
 * }
 * }</pre>
 */
public final class ChildFleet implements AutoCloseable {
    private final List<ChildJvm> children;

    private ChildFleet(List<ChildJvm> children) {
        this.children = List.copyOf(children);
    }

    /**
     * Starts children {@code 1..count} with {@code start}, in order. If one cannot start, those already started are
     * stopped and the failure is thrown.
     */
    public static ChildFleet start(int count, IntFunction<ChildJvm> start) {
        List<ChildJvm> started = new ArrayList<>();
        try {
            for (int id = 1; id <= count; id++) {
                ChildJvm child = start.apply(id);
                ExitCleanup.register(child);
                started.add(child);
            }
        } catch (RuntimeException e) {
            new ChildFleet(started).close();
            throw e;
        }
        return new ChildFleet(started);
    }

    public List<ChildJvm> all() {
        return children;
    }

    /** Child {@code id} (from 1). */
    public ChildJvm get(int id) {
        return children.get(id - 1);
    }

    public int size() {
        return children.size();
    }

    /** Sends {@code command} to every child, in order. */
    public void send(String command) {
        children.forEach(child -> child.send(command));
    }

    /** The children whose process has ended, in order. */
    public List<ChildJvm> exited() {
        return children.stream().filter(child -> !child.isAlive()).toList();
    }

    /**
     * Sends {@code STOP} to every child and waits up to {@code wait} for each to exit (and for its last lines to be
     * read); then stops them all. Returns the children that had not exited in time, which were killed.
     */
    public List<ChildJvm> stop(Duration wait) {
        send("STOP");
        List<ChildJvm> late = new ArrayList<>();
        for (ChildJvm child : children) {
            if (!child.awaitExit(wait)) {
                late.add(child);
            }
        }
        close();
        return late;
    }

    /** Thaws and kills every child still running. Safe to call twice. */
    @Override
    public void close() {
        for (ChildJvm child : children) {
            try {
                child.close();
            } finally {
                ExitCleanup.unregister(child);
            }
        }
    }
}
