package dev.fencing.lock.zookeeper;

import dev.fencing.lock.FencedLock;
import dev.fencing.testsupport.EmbeddedZooKeeperEnsemble;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Leader failover in a real 3-server ensemble while clients contend for one lock. */
class EnsembleFailoverIT {
    private static final int CLIENTS = 4;

    @Test
    void tokensKeepRisingAndValidHoldsNeverOverlapWhileTheLeaderStopsAndReturns() throws Exception {
        try (EmbeddedZooKeeperEnsemble ensemble = EmbeddedZooKeeperEnsemble.start(3);
                ZooKeeperClients clients = new ZooKeeperClients(ensemble.connectString())) {
            List<EnsembleFailover.Contender> contenders = new ArrayList<>();
            for (int i = 0; i < CLIENTS; i++) {
                FencedLock lock =
                        clients.locks(clients.newClient(Duration.ofSeconds(15))).lock("/it/failover");
                contenders.add(() -> lock.tryAcquire(Duration.ofSeconds(2)).map(lease -> {
                    try (lease) {
                        long start = System.nanoTime();
                        Thread.onSpinWait();
                        return new EnsembleFailover.Hold(lease.token(), start, System.nanoTime(), lease.isValid());
                    }
                }));
            }
            EnsembleFailover.assertRisingAndDisjoint(EnsembleFailover.throughFailover(ensemble, contenders, 100), 250);
        }
    }
}
