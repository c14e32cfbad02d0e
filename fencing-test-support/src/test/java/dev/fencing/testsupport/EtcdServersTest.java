package dev.fencing.testsupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Settings checked before any etcd runs. */
class EtcdServersTest {

    @Test
    void externalEndpointsAreTrimmedAndClosingThemDoesNothing() {
        EtcdEndpoint external = EtcdServers.external(" http://etcd1:2379, https://etcd2:2379 ,");

        external.close();

        assertThat(external.endpoints()).containsExactly("http://etcd1:2379", "https://etcd2:2379");
    }

    @Test
    void anExternalEndpointWithoutSchemeOrPortIsRefusedNamingIt() {
        assertThatThrownBy(() -> EtcdServers.external("http://etcd1:2379,etcd2:2379"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("FENCING_ETCD_ENDPOINTS holds 'etcd2:2379'");
        assertThatThrownBy(() -> EtcdServers.external("http://etcd1"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'http://etcd1'");
        assertThatThrownBy(() -> EtcdServers.external(" , "))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("names no endpoint");
    }

    @Test
    void theBuilderRefusesBadSettingsNamingThem() {
        EmbeddedEtcdCluster.Builder builder = EmbeddedEtcdCluster.builder();

        assertThatThrownBy(() -> builder.members(0)).hasMessageContaining("got 0");
        assertThatThrownBy(() -> builder.host("::1")).hasMessageContaining("'::1'");
        assertThatThrownBy(() -> builder.heartbeatInterval(Duration.ZERO)).hasMessageContaining("heartbeatInterval");
        assertThatThrownBy(() -> builder.flag("data-dir", "/tmp/x")).hasMessageContaining("chosen by the cluster");
        assertThatThrownBy(() -> builder.flag("--snapshot-count", "5")).hasMessageContaining("'--snapshot-count'");
        assertThatThrownBy(() -> builder.heartbeatInterval(Duration.ofMillis(300))
                        .electionTimeout(Duration.ofMillis(1000))
                        .build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("at least 5 heartbeat intervals");
    }
}
