package dev.fencing.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class TextTest {
    @Test
    void findsTheFirstSurrogateWithoutItsPairWhereverItIs() {
        assertThat(Text.firstUnpairedSurrogate("sku-42")).isEqualTo(-1);
        assertThat(Text.firstUnpairedSurrogate("a\uD83D\uDE00b"))
                .as("a whole pair")
                .isEqualTo(-1);
        assertThat(Text.firstUnpairedSurrogate("a\uD800"))
                .as("a high one at the end")
                .isEqualTo(1);
        assertThat(Text.firstUnpairedSurrogate("\uDC00a"))
                .as("a low one at the start")
                .isEqualTo(0);
        assertThat(Text.firstUnpairedSurrogate("a\uD800\uD83D\uDE00"))
                .as("a high one before a pair")
                .isEqualTo(1);
        assertThat(Text.firstUnpairedSurrogate("\uD83D\uDE00\uDE00"))
                .as("a low one after a pair")
                .isEqualTo(2);
    }

    @Test
    void findsControlCharactersAndShowsThemAsQuestionMarks() {
        assertThat(Text.firstControl("host-1")).isEqualTo(-1);
        assertThat(Text.firstControl("host\n1")).isEqualTo(4);
        assertThat(Text.firstControl("host\u00851")).as("C1").isEqualTo(4);
        assertThat(Text.withoutControls("a\tb\u007Fc\u0085\uD83D\uDE00")).isEqualTo("a?b?c?\uD83D\uDE00");
    }
}
