package dev.fencing.lock.etcd.internal;

import dev.fencing.lock.FencedLockListener;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.ClientBuilder;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.GetOption;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** What the etcd lock tests share: clients, registries with their hooks, reads of the lock's keys. */
final class EtcdTesting {
    private EtcdTesting() {}

    static Client client(List<String> endpoints) {
        return clientBuilder(endpoints).build();
    }

    static ClientBuilder clientBuilder(List<String> endpoints) {
        return Client.builder().endpoints(endpoints.toArray(String[]::new));
    }

    static EtcdLockRegistry registry(Client client, String prefix, Duration ttl) {
        return registry(client, prefix, ttl, new FencedLockListener() {});
    }

    static EtcdLockRegistry registry(Client client, String prefix, Duration ttl, FencedLockListener listener) {
        return registry(client, prefix, ttl, Duration.ofMillis(Math.max(200, ttl.toMillis() / 3)), listener);
    }

    static EtcdLockRegistry registry(
            Client client, String prefix, Duration ttl, Duration pauseTolerance, FencedLockListener listener) {
        return new EtcdLockRegistry(new EtcdLockRegistry.Settings(client, prefix, ttl, pauseTolerance, listener));
    }

    static ByteSequence bytes(String text) {
        return ByteSequence.from(text, StandardCharsets.UTF_8);
    }

    /** The keys under {@code prefix}, in create-revision order. */
    static List<KeyValue> keysUnder(Client client, String prefix) throws Exception {
        return client.getKVClient()
                .get(
                        bytes(prefix),
                        GetOption.builder()
                                .isPrefix(true)
                                .withSortField(GetOption.SortTarget.CREATE)
                                .withSortOrder(GetOption.SortOrder.ASCEND)
                                .build())
                .get(10, TimeUnit.SECONDS)
                .getKvs();
    }

    static String text(ByteSequence bytes) {
        return bytes.toString(StandardCharsets.UTF_8);
    }
}
