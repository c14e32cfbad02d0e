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
        assertThat(FenceTokenHeader.encode(FenceTokenHeader.MAX_TOKEN))
                .isEqualTo(ByteBuffer.allocate(8)
                        .putLong(FenceTokenHeader.MAX_TOKEN)
                        .array());
        assertThat(FenceTokenHeader.encode(0x0002030405060708L)).containsExactly(0, 2, 3, 4, 5, 6, 7, 8);
    }

    @Test
    void decodesWhatItEncodes() {
        for (long token : new long[] {1, 255, 256, 1L << 32, (5L << 32) | 17, FenceTokenHeader.MAX_TOKEN}) {
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
    void refusesEightBytesOfTextAsTheConsoleProducerWritesThemRatherThanReadAHugeToken() {
        byte[] text = "00000042".getBytes(StandardCharsets.US_ASCII); // 0x3030303030303432, about 3.47e18

        assertThatThrownBy(() -> FenceTokenHeader.decode(text))
                .isInstanceOf(UnreadableFenceTokenException.class)
                .hasMessage("header fencing-token holds 3472328296227681330 (the text \"00000042\"), above"
                        + " 72057594037927935 (2^56 - 1), the largest token a header carries");
        assertThat(ByteBuffer.wrap(text).getLong()).isEqualTo(3472328296227681330L); // what a plain read takes
    }

    @Test
    void readsTokensUpTo2To56Minus1AndRefusesEveryValueWhoseFirstByteIsNotZero() {
        assertThat(FenceTokenHeader.MAX_TOKEN).isEqualTo((1L << 56) - 1);
        assertThat(FenceTokenHeader.decode(
                        ByteBuffer.allocate(8).putLong((1L << 56) - 1).array()))
                .isEqualTo((1L << 56) - 1);
        for (long above : new long[] {1L << 56, (1L << 56) + 1, Long.MAX_VALUE}) {
            assertThatThrownBy(() -> FenceTokenHeader.decode(
                            ByteBuffer.allocate(8).putLong(above).array()))
                    .isInstanceOf(UnreadableFenceTokenException.class)
                    .hasMessageContaining("holds " + above + ", above 72057594037927935");
        }
    }

    @Test
    void refusesToEncodeATokenNoConsumerWouldRead() {
        assertThatThrownBy(() -> FenceTokenHeader.encode(1L << 56))
                .isInstanceOf(InvalidFenceTokenException.class)
                .isInstanceOf(UnreadableFenceTokenException.class)
                .hasMessageContaining("token 72057594037927936 is above 72057594037927935 (2^56 - 1)");
        assertThatThrownBy(() -> FenceTokenHeader.encode(Long.MAX_VALUE))
                .isInstanceOf(UnreadableFenceTokenException.class);
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
