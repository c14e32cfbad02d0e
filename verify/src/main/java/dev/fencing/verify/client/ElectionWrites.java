package dev.fencing.verify.client;

import com.zaxxer.hikari.HikariDataSource;
import dev.fencing.FencePolicy;
import dev.fencing.FencingException;
import dev.fencing.harness.ChildArguments;
import dev.fencing.harness.PointGate;
import dev.fencing.lock.FencedLeaderElection;
import dev.fencing.lock.Leadership;
import dev.fencing.lock.zookeeper.FencedLocks;
import java.time.Duration;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The election resource's writer: a participant in its resource's {@link FencedLeaderElection} (writer {@code c}
 * takes part in the election of {@code r<1 + (c - 1) % elections>}, so each has several participants in different
 * JVMs) that, while it leads, appends up to {@value #WRITES_PER_TERM} operation ids to the resource's row under
 * the term's token: through fencing-jdbc with the MONOTONIC policy in the fenced run (a term writes the row many
 * times), with a plain UPDATE in the control run. Then it steps down and joins again, so that terms rotate.
 *
 * <p>Its history records each term's grant (with when it learned it leads), and before each write what the term's
 * {@link Leadership#isValid()} answered (with when the check began), then the write's invoke and outcome. It
 * writes whatever the check answered, on purpose: it plays the deposed leader that sends one more write before it
 * notices, which the resource must refuse; after a write that read invalid, or that was not applied, its term is
 * over. The {@link PausePoint#LOCK_WRITE} point lies between the check and the write, where a pause or a partition
 * makes the next write late. Not thread-safe: one writer thread.
 */
final class ElectionWrites implements AutoCloseable {
    /** How many writes a term makes at most, before its leader steps down. */
    static final int WRITES_PER_TERM = 20;

    private static final Logger LOG = LoggerFactory.getLogger(ElectionWrites.class);
    private static final Duration LEAD_WAIT = Duration.ofSeconds(2);
    private static final Duration WRITE_GAP = Duration.ofMillis(20);
    private static final Duration THINK_TIME = Duration.ofMillis(100);

    private final int client;
    private final boolean fenced;
    private final String schema;
    private final String resource;
    private final HistoryWriter history;
    private final CoordinatorLink link;
    private final PointGate<PausePoint> gate;
    private final HikariDataSource dataSource;
    private ResourceWriter writer;
    private long sequence;

    /**
     * Arguments: {@code jdbcUrl}, {@code jdbcUser}, {@code schema}, {@code elections}; the JDBC password from
     * {@value WriterMain#PASSWORD_ENV}.
     */
    ElectionWrites(
            ChildArguments args,
            int client,
            boolean fenced,
            HistoryWriter history,
            CoordinatorLink link,
            PointGate<PausePoint> gate) {
        this.client = client;
        this.fenced = fenced;
        this.schema = args.text("schema");
        this.resource = "r" + (1 + (client - 1) % args.whole("elections"));
        this.history = history;
        this.link = link;
        this.gate = gate;
        this.dataSource = ResourceWriter.pool(args, client);
    }

    void connect() {
        Jdbi jdbi = Jdbi.create(dataSource);
        writer = fenced
                ? ResourceWriter.fenced(jdbi, schema, FencePolicy.MONOTONIC)
                : ResourceWriter.plain(jdbi, schema);
    }

    /** Takes part in the election under {@code lockRoot} until {@code stopping} says so. */
    void run(FencedLocks locks, String lockRoot, BooleanSupplier stopping) throws InterruptedException {
        try (FencedLeaderElection election = locks.election(lockRoot + "/" + resource, "writer-" + client)) {
            while (!stopping.getAsBoolean()) {
                Optional<Leadership> term;
                try {
                    term = election.awaitLeadership(LEAD_WAIT);
                } catch (FencingException e) {
                    LOG.warn("writer {}: election {} failed: {}", client, resource, e.toString());
                    Thread.sleep(200);
                    continue;
                }
                if (term.isEmpty()) {
                    continue;
                }
                long token = term.get().token();
                history.grant(WriterMain.OP_ID_BASE * client + ++sequence, resource, token, System.currentTimeMillis());
                link.emit("LOCKED", resource, token);
                try {
                    lead(term.get(), stopping);
                } finally {
                    link.emit("EFFECTS", resource, token); // everything it sends under this term is sent
                    election.stepDown();
                    link.emit("RELEASED", resource, token);
                }
                Thread.sleep(THINK_TIME.toMillis());
            }
        }
    }

    private void lead(Leadership term, BooleanSupplier stopping) throws InterruptedException {
        long token = term.token();
        WritePath path = fenced ? WritePath.UPDATE : WritePath.PLAIN;
        for (int n = 0; n < WRITES_PER_TERM && !stopping.getAsBoolean(); n++) {
            long op = WriterMain.OP_ID_BASE * client + ++sequence;
            long checked = System.currentTimeMillis();
            boolean valid = term.isValid();
            history.check(op, resource, token, checked, valid);
            gate.pass(PausePoint.LOCK_WRITE, () -> link.emit("POINT", PausePoint.LOCK_WRITE, resource, token, 0));
            history.invokeAppend(op, resource, token, path.label());
            WriteResult result = writer.append(path, resource, op, token, handle -> {});
            switch (result.kind()) {
                case APPLIED -> {
                    history.okAppend(op, resource, token);
                    link.emit("WRITTEN", resource, token);
                }
                case REFUSED -> {
                    history.failAppend(op, resource, token, result.detail());
                    link.emit("REFUSED", resource, token);
                }
                case INDETERMINATE -> {
                    history.infoAppend(op, resource, token, result.detail());
                    link.emit("UNKNOWN", resource, token);
                }
            }
            if (!valid || result.kind() != WriteResult.Kind.APPLIED) {
                return;
            }
            Thread.sleep(WRITE_GAP.toMillis());
        }
    }

    @Override
    public void close() {
        dataSource.close();
    }
}
