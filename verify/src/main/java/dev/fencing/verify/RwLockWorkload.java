package dev.fencing.verify;

import dev.fencing.verify.checker.CheckResult;
import dev.fencing.verify.checker.History;
import dev.fencing.verify.checker.RwLockChecker;
import java.util.List;

/**
 * The read/write-lock resource: a {@code FencedReadWriteLock} per resource, under which the writers' reads and
 * writes of the resource's row of the mode's {@code resources} table run (made as the chain's, see {@link
 * RunTables}; guarded by the trigger in the fenced run). At the end it reads the rows' lists and hands them, with
 * the histories (appends and reads), to {@link RwLockChecker}. Not thread-safe: one run at a time.
 */
final class RwLockWorkload implements Workload {
    private final Servers servers;
    private final int resources;

    RwLockWorkload(Servers servers, int resources) {
        this.servers = servers;
        this.resources = resources;
    }

    @Override
    public void prepare(Mode mode) {
        RunTables.prepare(servers.dataSource(), mode, resources);
    }

    @Override
    public List<String> writerArguments(Mode mode) {
        return List.of(
                "jdbcUrl=" + servers.clientJdbcUrl(), "jdbcUser=" + servers.jdbcUser(), "schema=" + mode.schema());
    }

    @Override
    public CheckResult check(Mode mode, History history) {
        return RwLockChecker.check(
                history, RunTables.lists(servers.dataSource(), mode), RwLockChecker.DEFAULT_CLOCK_UNCERTAINTY);
    }

    @Override
    public void remove(Mode mode) {
        RunTables.drop(servers.dataSource(), mode);
    }
}
