package dev.fencing.lock.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.lock.FencedLock;
import dev.fencing.lock.Lease;
import dev.fencing.testsupport.EtcdServers;
import io.etcd.jetcd.Client;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The class comment's sample, run as written against a real etcd member. */
class EtcdLocksIT {

    @Test
    void theClassCommentsSampleRunsAndItsTokensRise() {
        List<Long> stored = new ArrayList<>();
        Client client = Client.builder()
                .endpoints(EtcdServers.shared().endpoints().toArray(String[]::new))
                .build();
        try (EtcdLocks locks = EtcdLocks.builder(client)
                .prefix("it/sample-" + System.nanoTime())
                .leaseTtl(Duration.ofSeconds(10))
                .build()) {
            FencedLock lock = locks.lock("sku-42");
            try (Lease lease = lock.acquire()) {
                stored.add(lease.token());
            }
            Optional<Lease> maybe = lock.tryAcquire(Duration.ofSeconds(2));
            try (Lease lease = maybe.orElseThrow()) {
                stored.add(lease.token());
            }
            stored.add(lock.runLocked(Lease::token));
            assertThat(lock.path()).endsWith("/sku-42");
        }
        client.close();

        assertThat(stored).hasSize(3).isSorted().doesNotHaveDuplicates();
    }
}
