package dev.fencing.lock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.apache.zookeeper.ZooDefs;
import org.junit.jupiter.api.Test;

class ZooKeeperDigestTest {

    @Test
    void grantsAllPermissionsToTheDigestUserOnly() {
        ZooKeeperDigest digest = ZooKeeperDigest.of("orders", "s3cret");
        assertThat(digest.acl()).singleElement().satisfies(acl -> {
            assertThat(acl.getPerms()).isEqualTo(ZooDefs.Perms.ALL);
            assertThat(acl.getId().getScheme()).isEqualTo("digest");
            assertThat(acl.getId().getId()).startsWith("orders:").doesNotContain("s3cret");
        });
        assertThat(digest.authInfo().getScheme()).isEqualTo("digest");
        assertThat(digest.toString()).doesNotContain("s3cret");
    }

    @Test
    void rejectsBadCredentialsNamingTheValue() {
        assertThatThrownBy(() -> ZooKeeperDigest.of("a:b", "x")).hasMessageContaining("'a:b'");
        assertThatThrownBy(() -> ZooKeeperDigest.of("", "x")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> ZooKeeperDigest.of("u", "")).hasMessageContaining("'u'");
    }

    /** A user name comes from configuration; a refused one is shown with its control characters as '?'. */
    @Test
    void aRefusedUserIsShownWithoutItsControlCharacters() {
        assertThatThrownBy(() -> ZooKeeperDigest.of("ops\u0085:x", "secret"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'ops?:x'")
                .satisfies(e -> assertThat(e.getMessage().chars()).noneMatch(Character::isISOControl));
        assertThatThrownBy(() -> ZooKeeperDigest.of("ops\n", ""))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'ops?'")
                .satisfies(e -> assertThat(e.getMessage().chars()).noneMatch(Character::isISOControl));
    }
}
