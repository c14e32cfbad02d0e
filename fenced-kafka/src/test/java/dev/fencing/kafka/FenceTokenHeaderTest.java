package dev.fencing.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.InvalidFenceTokenException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;

class FenceTokenHeaderTest {

    @Test
    void encodesTokenAsEightBytesBigEndian() {
        assertThat(FenceTokenHeader.encode(42L)).containsExactly(0, 0, 0, 0, 0, 0, 0, 42);
        assertThat(FenceTokenHeader.encode(Long.MAX_VALUE))
                .isEqualTo(ByteBuffer.allocate(8).putLong(Long.MAX_VALUE).array());
        assertThat(FenceTokenHeader.encode(0x0102030405060708L)).containsExactly(1, 2, 3, 4, 5, 6, 7, 8);
    }

    @Test
    void decodesWhatItEncodes() {
        for (long token : new long[] {1, 255, 256, 1L << 32, (5L << 32) | 17, Long.MAX_VALUE}) {
            assertThat(FenceTokenHeader.decode(FenceTokenHeader.encode(token))).isEqualTo(token);
        }
    }

    @Test
    void refusesToEncodeTokensThatAreNotPositive() {
        assertThatThrownBy(() -> FenceTokenHeader.encode(0))
                .isInstanceOf(InvalidFenceTokenException.class)
                .hasMessageContaining("got 0 for header fencing-token");
        assertThatThrownBy(() -> FenceTokenHeader.encode(-5))
                .isInstanceOf(InvalidFenceTokenException.class)
                .hasMessageContaining("got -5");
    }

    @Test
    void refusesValuesThatAreNotExactlyEightBytes() {
        assertThatThrownBy(() -> FenceTokenHeader.decode(new byte[] {1, 2, 3}))
                .isInstanceOf(UnreadableFenceTokenException.class)
                .hasMessageContaining("exactly 8 bytes, got 3");
        assertThatThrownBy(() -> FenceTokenHeader.decode(new byte[9]))
                .isInstanceOf(UnreadableFenceTokenException.class)
                .hasMessageContaining("got 9");
        assertThatThrownBy(() -> FenceTokenHeader.decode("42".getBytes(StandardCharsets.UTF_8)))
                .isInstanceOf(UnreadableFenceTokenException.class);
        assertThatThrownBy(() -> FenceTokenHeader.decode(null)).isInstanceOf(UnreadableFenceTokenException.class);
    }

    @Test
    void refusesEightBytesThatHoldZeroOrANegativeNumber() {
        assertThatThrownBy(() -> FenceTokenHeader.decode(new byte[8]))
                .isInstanceOf(UnreadableFenceTokenException.class)
                .hasMessageContaining("holds 0");
        assertThatThrownBy(() -> FenceTokenHeader.decode(
                        ByteBuffer.allocate(8).putLong(-1).array()))
                .isInstanceOf(UnreadableFenceTokenException.class)
                .hasMessageContaining("holds -1");
    }

    @Test
    void readsTheLastTokenHeaderOrMinusOneWhenAbsent() {
        RecordHeaders headers = new RecordHeaders();
        assertThat(FenceTokenHeader.read(headers)).isEqualTo(-1);
        headers.add(FenceTokenHeader.NAME, FenceTokenHeader.encode(3));
        headers.add(FenceTokenHeader.NAME, FenceTokenHeader.encode(9));
        assertThat(FenceTokenHeader.read(headers)).isEqualTo(9);
    }

    @Test
    void anUnreadableHeaderIsTheKafkaCaseOfFencingCoresInvalidToken() {
        assertThatThrownBy(() -> FenceTokenHeader.decode(new byte[3]))
                .isInstanceOf(dev.fencing.InvalidFenceTokenException.class)
                .isInstanceOf(dev.fencing.FencingException.class);
    }
}
