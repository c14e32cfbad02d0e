package dev.fencing.lock.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Bad settings fail at once, with a message that names the value. No server: jetcd connects lazily. */
class EtcdLocksBuilderTest {
    private final Client client =
            Client.builder().endpoints("http://127.0.0.1:1").build();

    @AfterEach
    void close() {
        client.close();
    }

    @Test
    void refusesPrefixesThatAreEmptyBlankSlashedOrHoldEmptySegmentsOrControlCharacters() {
        for (String bad : new String[] {"", "  ", "/locks", "locks/", "locks//a", "lo cks", "locks\n"}) {
            assertThatThrownBy(() -> EtcdLocks.builder(client).prefix(bad))
                    .as("prefix '%s'", bad)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("prefix '" + bad.replaceAll("\\p{Cntrl}", "?") + "'");
        }
        assertThatThrownBy(() -> EtcdLocks.builder(client).prefix(null)).isInstanceOf(NullPointerException.class);
    }

    @Test
    void refusesLeaseTtlsThatAreNotPositiveWholeSecondsOfAtLeastTwo() {
        for (Duration bad : new Duration[] {
            Duration.ZERO, Duration.ofSeconds(-5), Duration.ofSeconds(1), Duration.ofMillis(2_500), Duration.ofDays(400)
        }) {
            assertThatThrownBy(() -> EtcdLocks.builder(client).leaseTtl(bad))
                    .as("leaseTtl %s", bad)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("leaseTtl")
                    .hasMessageContaining(bad.toString());
        }
    }

    @Test
    void refusesAPauseToleranceBelowTwentyMillisecondsOrNotBelowTheTtl() {
        assertThatThrownBy(() -> EtcdLocks.builder(client).pauseTolerance(Duration.ofMillis(5)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("PT0.005S");
        assertThatThrownBy(() -> EtcdLocks.builder(client)
                        .leaseTtl(Duration.ofSeconds(3))
                        .pauseTolerance(Duration.ofSeconds(3))
                        .build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("pauseTolerance PT3S")
                .hasMessageContaining("leaseTtl PT3S");
    }

    @Test
    void refusesLockNamesThatAreBlankOrHoldASlashOrControlCharacters() {
        try (EtcdLocks locks = EtcdLocks.builder(client).build()) {
            for (String bad : new String[] {"", " ", "a/b", "/sku-42"}) {
                assertThatThrownBy(() -> locks.lock(bad))
                        .as("name '%s'", bad)
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("'" + bad + "'");
            }
            assertThatThrownBy(() -> locks.lock("sku\u0000"))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("'sku?'");
        }
    }

    /**
     * A lock name goes into its key, and the create transaction carries the key seven times: etcd refuses a name of
     * about 250 KB ("request is too large", the default request limit is 1.5 MiB), but only once an acquire has had
     * a lease granted, and the failure's message then held the whole name.
     */
    @Test
    void refusesLockNamesLongerThan1024BytesOfUtf8AtOnceShowingOnlyTheirStart() {
        try (EtcdLocks locks = EtcdLocks.builder(client).build()) {
            assertThat(locks.lock("n".repeat(1024)).path()).isEqualTo("fencing/locks/" + "n".repeat(1024));
            String overlong = "sku-" + "n".repeat(250_000);
            assertThatThrownBy(() -> locks.lock(overlong))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("250004 bytes of UTF-8, more than 1024")
                    .hasMessageContaining("'sku-nnnn")
                    .satisfies(e -> assertThat(e.getMessage()).hasSizeLessThan(300));
            // 513 two-byte characters: 1026 bytes, though 513 chars
            assertThatThrownBy(() -> locks.election("\u00e9".repeat(513), "host-a"))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("1026 bytes");
        }
    }

    @Test
    void refusesBlankOrOverlongParticipantIdsNamingTheElectionAndCuttingTheIdBetweenCharacters() {
        try (EtcdLocks locks = EtcdLocks.builder(client).build()) {
            assertThatThrownBy(() -> locks.election("leader", " "))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("' '")
                    .hasMessageContaining("fencing/locks/leader");
            // the 40th and 41st chars are one character (a surrogate pair): a cut between them leaves half of it
            String overlong = "x".repeat(39) + "\uD83D\uDE00" + "y".repeat(1100);
            assertThatThrownBy(() -> locks.election("leader", overlong))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("1143 bytes")
                    .hasMessageContaining("fencing/locks/leader")
                    .satisfies(e -> assertThat(e.getMessage().codePoints())
                            .as("the message's code points")
                            .noneMatch(cp -> cp >= Character.MIN_SURROGATE && cp <= Character.MAX_SURROGATE));
        }
    }

    /**
     * etcd keys and values are bytes; a string with half a surrogate pair has no UTF-8 form, and Java's encoder
     * writes '?' in its place: {@code sku-} and a lone high surrogate would be the lock {@code sku-?}, one lock under two names (a
     * thread holding one and acquiring the other would wait for itself), and a participant would lead under an id
     * that {@code currentLeaderId()} reports differently.
     */
    @Test
    void refusesNamesPrefixesAndParticipantIdsWithHalfASurrogatePairWhichEtcdWouldStoreAsAnotherName() {
        String halfPair = "sku-\uD800";
        assertThat(ByteSequence.from(halfPair, StandardCharsets.UTF_8))
                .as("what etcd would be sent")
                .isEqualTo(ByteSequence.from("sku-?", StandardCharsets.UTF_8));

        assertThatThrownBy(() -> EtcdLocks.builder(client).prefix("locks-\uDC00"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("prefix 'locks-?'")
                .hasMessageContaining("\\uDC00 at index 6");
        try (EtcdLocks locks = EtcdLocks.builder(client).build()) {
            assertThatThrownBy(() -> locks.lock(halfPair))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("lock name 'sku-?'")
                    .hasMessageContaining("\\uD800 at index 4");
            assertThatThrownBy(() -> locks.election(halfPair, "host-a"))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("\\uD800 at index 4");
            assertThatThrownBy(() -> locks.election("leader", "host-\uDBFF"))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("participantId 'host-?'")
                    .hasMessageContaining("fencing/locks/leader")
                    .hasMessageContaining("\\uDBFF at index 5");
            assertThat(locks.lock("sku-\uD83D\uDE00").path())
                    .as("a whole pair is a character")
                    .isEqualTo("fencing/locks/sku-\uD83D\uDE00");
        }
    }

    /** An id ends up in thread names and INFO log lines: a line break in it would forge a log line. */
    @Test
    void refusesParticipantIdsWithControlCharactersNamingTheElectionAndTheIndex() {
        try (EtcdLocks locks = EtcdLocks.builder(client).build()) {
            assertThatThrownBy(() -> locks.election("leader", "host-a\nINFO forged line"))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("participantId 'host-a?INFO forged line'")
                    .hasMessageContaining("fencing/locks/leader")
                    .hasMessageContaining("\\u000A at index 6")
                    .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
            assertThatThrownBy(() -> locks.election("leader", "host\u0085b"))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("'host?b'")
                    .hasMessageContaining("\\u0085 at index 4");
            assertThatThrownBy(() -> locks.election("leader", "\r\n"))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("fencing/locks/leader")
                    .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\r", "\n"));
            assertThat(locks.election("leader", "host-a \u00E9\uD83D\uDE00").participantId())
                    .isEqualTo("host-a \u00E9\uD83D\uDE00");
        }
    }

    /**
     * A C1 control (U+0080 to U+009F: NEL, CSI) is a control character as much as a line feed: a terminal reading the
     * log line acts on it. Java's {@code \p{Cntrl}} is ASCII only, so a message must not rely on it to hide one.
     */
    @Test
    void refusedPrefixesAndLockNamesAreShownWithoutTheirC0OrC1ControlCharacters() {
        for (String bad : new String[] {"locks\u0085", "locks\u009b2J", "/locks\u0085", "locks\u0085/", "\u001c"}) {
            assertThatThrownBy(() -> EtcdLocks.builder(client).prefix(bad))
                    .as("prefix '%s'", bad)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("prefix '" + bad.replaceAll("[\\x00-\\x1f\\x7f-\\x9f]", "?") + "'")
                    .satisfies(e -> assertThat(e.getMessage().chars()).noneMatch(Character::isISOControl));
        }
        try (EtcdLocks locks = EtcdLocks.builder(client).build()) {
            for (String bad : new String[] {"sku\u0085", "sku\u009b2J", "a/b\u0085", "\u001c"}) {
                assertThatThrownBy(() -> locks.lock(bad))
                        .as("name '%s'", bad)
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("'" + bad.replaceAll("[\\x00-\\x1f\\x7f-\\x9f]", "?") + "'")
                        .satisfies(e -> assertThat(e.getMessage().chars()).noneMatch(Character::isISOControl));
            }
        }
    }

    @Test
    void refusesLocksOnceClosed() {
        EtcdLocks locks = EtcdLocks.builder(client).build();
        locks.close();
        locks.close();

        assertThatThrownBy(() -> locks.lock("sku-42"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("fencing/locks/sku-42");
    }
}
