package dev.fencing.verify;

import dev.fencing.verify.checker.CheckResult;
import dev.fencing.verify.checker.ElectionChecker;
import dev.fencing.verify.checker.History;
import java.util.List;

/**
 * The election resource: one leader election per resource, each with at least two participants (writer {@code c}
 * takes part in the election of {@code r<1 + (c - 1) % elections>}, where {@code elections} is {@code --resources}
 * but at most half the writers), whose leaders append to the resource's row of the mode's {@code resources} table
 * (made as the chain's, see {@link RunTables}; guarded by the trigger in the fenced run) many times per term. At
 * the end it reads the rows' lists and hands them, with the histories, to {@link ElectionChecker}. Not
 * thread-safe: one run at a time.
 */
final class ElectionWorkload implements Workload {
    private final Servers servers;
    private final int elections;

    ElectionWorkload(Servers servers, int resources, int clients) {
        this.servers = servers;
        this.elections = elections(resources, clients);
    }

    /** How many elections: one per resource, with at least two participants each where there are two writers. */
    static int elections(int resources, int clients) {
        return Math.max(1, Math.min(resources, clients / 2));
    }

    @Override
    public void prepare(Mode mode) {
        RunTables.prepare(servers.dataSource(), mode, elections);
    }

    @Override
    public List<String> writerArguments(Mode mode) {
        return List.of(
                "jdbcUrl=" + servers.clientJdbcUrl(),
                "jdbcUser=" + servers.jdbcUser(),
                "schema=" + mode.schema(),
                "elections=" + elections);
    }

    @Override
    public CheckResult check(Mode mode, History history) {
        return ElectionChecker.check(
                history, RunTables.lists(servers.dataSource(), mode), ElectionChecker.DEFAULT_CLOCK_UNCERTAINTY);
    }

    @Override
    public void remove(Mode mode) {
        RunTables.drop(servers.dataSource(), mode);
    }
}
