package dev.fencing.lock.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.lock.Lease;
import dev.fencing.testsupport.EtcdServers;
import dev.fencing.testsupport.PostgresServers;
import dev.fencing.testsupport.ProcessFreezer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import org.junit.jupiter.api.Test;

/**
 * A holder JVM frozen (SIGSTOP) past its lease's TTL: etcd expires the lease and deletes the key, the lock passes
 * to this JVM with a greater token, and every check the resumed holder begins after its SIGCONT reads invalid,
 * though nothing has told it yet that its lease is gone. Its late write to PostgreSQL through fencing-jdbc is
 * refused; the same write as a plain UPDATE lands over the next holder's.
 */
class FrozenHolderIT {
    private static final int TTL_SECONDS = 3;

    @Test
    void aResumedHolderReadsItsExpiredLeaseInvalidAndItsLateWriteIsRefusedWhileTheSameWriteAsAPlainUpdateLands()
            throws Exception {
        List<String> endpoints = EtcdServers.shared().endpoints();
        String prefix = "it/frozen-" + System.nanoTime();
        try (Ledger ledger = Ledger.create(PostgresServers.shared());
                StaleHolder holder = StaleHolder.start(
                        List.of(),
                        List.of(),
                        endpoints,
                        prefix,
                        TTL_SECONDS,
                        ledger.database.jdbcUrl(),
                        ledger.database,
                        null);
                NextHolder next = NextHolder.connect(endpoints, prefix, TTL_SECONDS)) {
            long frozenToken = holder.token();
            holder.writesThroughTheFence(ledger, frozenToken);
            for (int i = 0; i < 5; i++) {
                assertThat(holder.next("RESULT ")).endsWith(" true null");
            }

            Lease taken;
            long lastBegunBeforeResume;
            try (ProcessFreezer.Frozen frozen = ProcessFreezer.freeze(holder.pid(), Duration.ofSeconds(60))) {
                // etcd expires the frozen holder's lease a TTL after its last keep-alive and deletes its key
                taken = next.takeOver();
                assertThat(frozen.elapsed()).isGreaterThan(Duration.ofSeconds(TTL_SECONDS - 1));
                lastBegunBeforeResume = lastBegun(holder.lines());
            }

            List<String> afterResume = new ArrayList<>();
            while (afterResume.size() < 20) {
                String line = holder.next("RESULT ");
                String[] parts = line.split(" ");
                if (Long.parseLong(parts[1]) > lastBegunBeforeResume) {
                    afterResume.add(line);
                }
            }
            assertThat(taken.token()).isGreaterThan(frozenToken);
            assertThat(taken.isValid()).isTrue();
            assertThat(afterResume).allMatch(line -> line.split(" ")[2].equals("false"), "reads invalid");

            holder.lateWriteIsRefusedWhileAPlainUpdateLands(ledger, frozenToken, taken.token());
            taken.close();
        }
    }

    /** The highest n of a {@code BEGIN n} printed so far; the holder is frozen, so nothing more comes. */
    private static long lastBegun(BlockingQueue<String> lines) {
        long last = -1;
        List<String> seen = new ArrayList<>();
        lines.drainTo(seen);
        for (String line : seen) {
            if (line.startsWith("BEGIN ")) {
                last = Long.parseLong(line.substring(6));
            }
        }
        // put the RESULT lines back for the caller, in order, ahead of anything that comes later
        List<String> rest = new ArrayList<>(seen);
        lines.drainTo(rest);
        lines.addAll(rest);
        return last;
    }
}
