package dev.fencing.verify;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class DeadLetterRecorderTest {

    @Test
    void aDeadLettersValueIsTheOperationWhoseIdItsTextIs() {
        assertThat(DeadLetterRecorder.op("3000017")).isEqualTo(3000017L);
        assertThat(DeadLetterRecorder.op(null)).isNull();
        assertThat(DeadLetterRecorder.op("not an id")).isNull();
    }

    @Test
    void aValueThatIsAnIdOnlyOnceReadLenientlyCarriesNoOperation() {
        // the writers send Long.toString of the id: read leniently, each of these would be op 101's dead letter
        for (String value : List.of("+101", "0101", "00101")) {
            assertThat(DeadLetterRecorder.op(value)).as("'%s'", value).isNull();
        }
    }
}
