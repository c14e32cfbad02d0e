package dev.fencing.lock.zookeeper.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class ParticipantIdValidationTest {

    @Test
    void refusesBlankOrOverlongIdsNamingTheElectionAndCuttingTheIdBetweenCharacters() {
        assertThatThrownBy(() -> LockNames.validParticipantId("/locks/leader", " "))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("' '")
                .hasMessageContaining("/locks/leader");
        // the 40th and 41st chars are one character (a surrogate pair): a cut between them leaves half of it
        String overlong = "x".repeat(39) + "\uD83D\uDE00" + "y".repeat(1100);
        assertThatThrownBy(() -> LockNames.validParticipantId("/locks/leader", overlong))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("1143 bytes")
                .hasMessageContaining("/locks/leader")
                .hasMessageContaining("x".repeat(39) + "\uD83D\uDE00...'")
                .satisfies(e -> assertThat(e.getMessage().codePoints())
                        .as("the message's code points")
                        .noneMatch(cp -> cp >= Character.MIN_SURROGATE && cp <= Character.MAX_SURROGATE));
    }

    /** An id ends up in thread names and INFO log lines: a line break in it would forge a log line. */
    @Test
    void refusesIdsWithControlCharactersNamingTheElectionAndTheIndex() {
        assertThatThrownBy(() -> LockNames.validParticipantId("/locks/leader", "host-a\nINFO forged line"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("participant id 'host-a?INFO forged line'")
                .hasMessageContaining("/locks/leader")
                .hasMessageContaining("\\u000A at index 6")
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
        assertThatThrownBy(() -> LockNames.validParticipantId("/locks/leader", "host\u0085b"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'host?b'")
                .hasMessageContaining("\\u0085 at index 4");
        assertThatThrownBy(() -> LockNames.validParticipantId("/locks/leader", "\r\n"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("/locks/leader")
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\r", "\n"));
        assertThat(LockNames.validParticipantId("/locks/leader", "host-a \u00E9\uD83D\uDE00"))
                .isEqualTo("host-a \u00E9\uD83D\uDE00");
    }
}
