package dev.fencing.testsupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.GetOption;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

/** Real etcd servers from the binary {@link EtcdBinary} finds or fetches, driven through jetcd. */
class EtcdServersIT {
    private static final Duration ELECTION = Duration.ofSeconds(15);

    @Test
    void aSingleMemberStoresAndReturnsAKeyThroughJetcd() throws Exception {
        try (EtcdEndpoint etcd = EtcdServers.start();
                Client client = client(etcd.endpoints())) {
            put(client, "single/k", "v1");

            assertThat(get(client, "single/k").getValue().toString(StandardCharsets.UTF_8))
                    .isEqualTo("v1");
        }
    }

    @Test
    void anExternalClusterIsUsedAsConfiguredAndClosingItLeavesTheClusterRunning() throws Exception {
        try (EmbeddedEtcdCluster cluster = EmbeddedEtcdCluster.start(1)) {
            String url = cluster.endpoints().get(0);
            EtcdEndpoint external = EtcdServers.start(Map.of(EtcdServers.ENDPOINTS_ENV, " " + url + " ,"));

            external.close();

            assertThat(external.endpoints()).containsExactly(url);
            assertThat(cluster.members().get(0).isRunning()).isTrue();
            try (Client client = client(external.endpoints())) {
                put(client, "external/k", "v1");
                assertThat(get(client, "external/k").getVersion()).isEqualTo(1);
            }
        }
    }

    @Test
    void writesContinueAfterTheLeaderOfThreeIsKilledAndTheRestartedMemberCatchesUp() throws Exception {
        EmbeddedEtcdCluster cluster = EtcdServers.startCluster(3);
        List<EtcdMember> members = cluster.members();
        try (Client client = client(cluster.endpoints())) {
            // three members with ports and data of their own
            assertThat(members).hasSize(3).allMatch(EtcdMember::isHealthy);
            assertThat(members.stream().flatMap(m -> List.of(m.clientUrl(), m.peerUrl()).stream()))
                    .doesNotHaveDuplicates();
            assertThat(members.stream().map(EtcdMember::dataDirectory)).doesNotHaveDuplicates();
            put(client, "ha/k", "before");
            EtcdMember leader = cluster.awaitLeader(ELECTION);

            leader.kill();

            assertThat(leader.isRunning()).isFalse();
            EtcdMember next = cluster.awaitLeader(ELECTION);
            assertThat(next).isNotSameAs(leader);
            // the first write may meet the dead member's connection; once one lands, they all do
            await().atMost(ELECTION).ignoreExceptions().untilAsserted(() -> put(client, "ha/k", "after-0"));
            for (int i = 1; i <= 10; i++) {
                put(client, "ha/k", "after-" + i);
            }
            assertThat(get(client, "ha/k").getValue().toString(StandardCharsets.UTF_8))
                    .isEqualTo("after-10");

            leader.start();

            assertThat(leader.isHealthy()).isTrue();
            try (Client local = client(List.of(leader.clientUrl()))) {
                // a serializable read answers from the member's own store: it has replayed what it missed
                await().atMost(ELECTION).untilAsserted(() -> assertThat(local.getKVClient()
                                .get(
                                        key("ha/k"),
                                        GetOption.builder()
                                                .withSerializable(true)
                                                .build())
                                .get(5, TimeUnit.SECONDS)
                                .getKvs()
                                .get(0)
                                .getValue()
                                .toString(StandardCharsets.UTF_8))
                        .isEqualTo("after-10"));
            }
        } finally {
            cluster.close();
        }

        cluster.close();
        assertThat(members).noneMatch(EtcdMember::isRunning);
        assertThat(cluster.directory()).doesNotExist();
        assertThatThrownBy(members.get(0)::start)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
    }

    @Test
    void aKeysCreateRevisionRisesAcrossLeaderChanges() throws Exception {
        try (EmbeddedEtcdCluster cluster = EtcdServers.startCluster(3);
                Client client = client(cluster.endpoints())) {
            put(client, "lock/a", "grant-1");
            long first = get(client, "lock/a").getCreateRevision();
            EtcdMember firstLeader = cluster.awaitLeader(ELECTION);

            // a clean stop: the leader hands over before it exits
            firstLeader.stop();
            EtcdMember secondLeader = cluster.awaitLeader(ELECTION);
            long second = regrant(client, "lock/a", "grant-2");
            // a crash of the next leader, with the first one back as a follower
            firstLeader.start();
            secondLeader.kill();
            EtcdMember thirdLeader = cluster.awaitLeader(ELECTION);
            long third = regrant(client, "lock/a", "grant-3");

            assertThat(secondLeader).isNotSameAs(firstLeader);
            assertThat(thirdLeader).isNotSameAs(secondLeader);
            assertThat(second).isGreaterThan(first);
            assertThat(third).isGreaterThan(second);
            assertThat(get(client, "lock/a").getCreateRevision()).isEqualTo(third);
        }
    }

    /** Deletes the key and creates it again, as a lock's next grant does; returns the new create revision. */
    private static long regrant(Client client, String key, String value) {
        await().atMost(ELECTION).ignoreExceptions().untilAsserted(() -> {
            client.getKVClient().delete(key(key)).get(5, TimeUnit.SECONDS);
            put(client, key, value);
        });
        try {
            return get(client, key).getCreateRevision();
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    private static Client client(List<String> endpoints) {
        return Client.builder().endpoints(endpoints.toArray(String[]::new)).build();
    }

    private static void put(Client client, String key, String value)
            throws InterruptedException, ExecutionException, TimeoutException {
        client.getKVClient().put(key(key), key(value)).get(5, TimeUnit.SECONDS);
    }

    private static KeyValue get(Client client, String key)
            throws InterruptedException, ExecutionException, TimeoutException {
        List<KeyValue> kvs =
                client.getKVClient().get(key(key)).get(5, TimeUnit.SECONDS).getKvs();
        assertThat(kvs).as("values of %s", key).hasSize(1);
        return kvs.get(0);
    }

    private static ByteSequence key(String text) {
        return ByteSequence.from(text, StandardCharsets.UTF_8);
    }
}
