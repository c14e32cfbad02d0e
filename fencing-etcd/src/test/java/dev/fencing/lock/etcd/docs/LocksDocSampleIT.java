package dev.fencing.lock.etcd.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.lock.FencedLock;
import dev.fencing.lock.Lease;
import dev.fencing.lock.etcd.EtcdLocks;
import dev.fencing.testsupport.EtcdServers;
import io.etcd.jetcd.Client;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** docs/locks.md's etcd sample, as written, against a real etcd member. */
class LocksDocSampleIT {

    /** A resource that refuses a token older than the newest it accepted for a SKU, as the sample's comment says. */
    private static final class Inventory {
        private final Map<String, Long> newest = new HashMap<>();
        private final List<Long> tokens = new ArrayList<>();

        void decrement(String sku, int quantity, long token) {
            if (token < newest.getOrDefault(sku, 0L)) {
                throw new IllegalStateException("token " + token + " is older than " + newest.get(sku));
            }
            newest.put(sku, token);
            tokens.add(token);
        }
    }

    @Test
    void theEtcdSampleOfTheLocksPageRunsAndASecondRunGetsAGreaterToken() {
        String[] endpoints = EtcdServers.shared().endpoints().toArray(String[]::new);
        Inventory inventory = new Inventory();
        for (int run = 0; run < 2; run++) {
            Client client = Client.builder().endpoints(endpoints).build();
            try (EtcdLocks locks = EtcdLocks.builder(client)
                    .prefix("locks")
                    .leaseTtl(Duration.ofSeconds(10))
                    .build()) {
                FencedLock lock = locks.lock("sku-42"); // contenders' keys under locks/sku-42/
                try (Lease lease = lock.acquire()) {
                    inventory.decrement("sku-42", 1, lease.token()); // the resource refuses older tokens
                }
            }
            client.close();
        }
        assertThat(inventory.tokens).hasSize(2).isSorted().doesNotHaveDuplicates();
    }
}
