package dev.fencing.testsupport;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class NetworkNamespaceTest {

    /**
     * The host end of a veth pair goes by itself once its namespace is deleted, so a cleanup can find it
     * listed and then gone; `ip link del` then says "No such device" (seen in a CI run of VerifyIT, whose
     * cleanup failed on it). Every way ip says "already gone" is tolerated; other errors are not.
     */
    @Test
    void everyWayIpSaysAlreadyGoneCountsAsGone() {
        assertThat(NetworkNamespace.alreadyGone(
                        "'ip link del fvy50u-c5h' failed (exit 2): RTNETLINK answers: No such device"))
                .isTrue();
        assertThat(NetworkNamespace.alreadyGone("'ip link del x' failed (exit 1): Cannot find device \"x\""))
                .isTrue();
        assertThat(NetworkNamespace.alreadyGone(
                        "'ip netns del x' failed (exit 1): Cannot remove namespace file: No such file or directory"))
                .isTrue();
        assertThat(NetworkNamespace.alreadyGone(
                        "'ip link del x' failed (exit 2): RTNETLINK answers: Operation not permitted"))
                .isFalse();
    }
}
