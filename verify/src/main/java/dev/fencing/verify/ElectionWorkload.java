package dev.fencing.verify;

import dev.fencing.verify.checker.CheckResult;
import dev.fencing.verify.checker.ElectionChecker;
import dev.fencing.verify.checker.History;
import dev.fencing.verify.checker.Observed;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
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
        Observed observed;
        try (Connection connection = servers.dataSource().getConnection()) {
            observed = Observed.read(connection, mode.schema());
        } catch (SQLException e) {
            throw new VerifyException("cannot read the run's tables: " + e.getMessage(), e);
        }
        return ElectionChecker.check(history, observed.lists(), ElectionChecker.DEFAULT_CLOCK_UNCERTAINTY);
    }

    @Override
    public void remove(Mode mode) {
        try (Connection connection = servers.dataSource().getConnection();
                Statement statement = connection.createStatement()) {
            statement.execute("DROP SCHEMA IF EXISTS " + mode.schema() + " CASCADE");
        } catch (SQLException e) {
            throw new VerifyException("cannot drop " + mode.schema() + ": " + e.getMessage(), e);
        }
    }
}
