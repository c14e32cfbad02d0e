package dev.fencing.verify;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

class ClientEventTest {

    @Test
    void aWritersEventCarriesItsResourceAndToken() {
        ClientEvent event = ClientEvent.parse("writer 3", 3, "E 1712345678901 WRITTEN r2 45")
                .orElseThrow();

        assertThat(event.resource()).isEqualTo("r2");
        assertThat(event.token()).isEqualTo(45);
    }

    @Test
    void aMalformedTokenFailsNamingTheSenderTheFieldAndTheValueInsteadOfReadingAsZero() {
        // read as 0, a takeover's token would never look newer than the paused holder's: the fault not counted
        ClientEvent event = ClientEvent.parse("writer 3", 3, "E 1712345678901 WRITTEN r2 4x5")
                .orElseThrow();

        assertThatThrownBy(event::token)
                .isInstanceOf(VerifyException.class)
                .hasMessageContaining("writer 3")
                .hasMessageContaining("WRITTEN")
                .hasMessageContaining("field 2")
                .hasMessageContaining("'4x5'");
    }

    @Test
    void aMissingNumberFailsNamingTheSenderAndTheFieldInsteadOfReadingAsZero() {
        ClientEvent event = ClientEvent.parse("writer 1", 1, "E 1712345678901 POINT LOCK_WRITE r1")
                .orElseThrow();

        assertThatThrownBy(() -> event.number(2))
                .isInstanceOf(VerifyException.class)
                .hasMessageContaining("writer 1")
                .hasMessageContaining("POINT")
                .hasMessageContaining("field 3")
                .hasMessageContaining("has only 2");
    }

    @Test
    void aNumberSpelledOtherwiseThanItsDecimalFormFailsNamingTheValueAsTheOriginHeadersDo() {
        // the children print Long.toString: "+5" or "05" is not what a child sent, so the line is not to be trusted
        for (String text : List.of("+5", "05", "-0", "005")) {
            ClientEvent event = ClientEvent.parse("writer 3", 3, "E 1712345678901 WRITTEN r2 " + text)
                    .orElseThrow();

            assertThatThrownBy(event::token)
                    .as("'%s'", text)
                    .isInstanceOf(VerifyException.class)
                    .hasMessageContaining("writer 3")
                    .hasMessageContaining("field 2")
                    .hasMessageContaining("'" + text + "'");
        }
    }

    @Test
    void aNumberInItsDecimalFormIsRead() {
        for (long value : List.of(0L, 5L, -5L, Long.MAX_VALUE, Long.MIN_VALUE)) {
            ClientEvent event = ClientEvent.parse("writer 3", 3, "E 1712345678901 WRITTEN r2 " + value)
                    .orElseThrow();

            assertThat(event.token()).isEqualTo(value);
        }
    }
}
