package dev.fencing.lock.zookeeper.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class ParticipantIdValidationTest {

    @Test
    void refusesBlankOrOverlongIdsNamingTheElectionAndCuttingTheIdBetweenCharacters() {
        assertThatThrownBy(() -> ElectionParticipant.validId("/locks/leader", " "))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("' '")
                .hasMessageContaining("/locks/leader");
        // the 40th and 41st chars are one character (a surrogate pair): a cut between them leaves half of it
        String overlong = "x".repeat(39) + "\uD83D\uDE00" + "y".repeat(1100);
        assertThatThrownBy(() -> ElectionParticipant.validId("/locks/leader", overlong))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("1143 bytes")
                .hasMessageContaining("/locks/leader")
                .hasMessageContaining("x".repeat(39) + "\uD83D\uDE00...'")
                .satisfies(e -> assertThat(e.getMessage().codePoints())
                        .as("the message's code points")
                        .noneMatch(cp -> cp >= Character.MIN_SURROGATE && cp <= Character.MAX_SURROGATE));
    }
}
