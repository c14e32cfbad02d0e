package dev.fencing.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.kafka.FenceTokenHeader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;

class TokenHeaderReaderTest {

    @Test
    void theInPlaceReaderPassesItsSelfCheckOnThisKafkaVersionAndIsTheOneChosen() {
        assertThat(TokenHeaderReader.get().inPlace()).isTrue();
        assertThat(TokenHeaderReader.selfCheck(TokenHeaderReader.get())).isNull();
        assertThat(TokenHeaderReader.selfCheck(TokenHeaderReader.publicApi())).isNull();
    }

    @Test
    void aCandidateThatFailsTheSelfCheckOrCannotBeMadeLeavesThePublicApi() {
        TokenHeaderReader firstNotLast = new TokenHeaderReader() {
            @Override
            public boolean inPlace() {
                return true;
            }

            @Override
            public long read(Headers headers) {
                var first = headers.headers(FenceTokenHeader.NAME).iterator();
                return first.hasNext() ? decode(first.next().value()) : FenceDecision.MISSING_TOKEN;
            }
        };

        assertThat(TokenHeaderReader.selfCheck(firstNotLast)).startsWith("self-check read 99");
        assertThat(TokenHeaderReader.choose(() -> firstNotLast)).isSameAs(TokenHeaderReader.publicApi());
        assertThat(TokenHeaderReader.choose(() -> {
                    throw new NoSuchFieldException("keyBuffer");
                }))
                .isSameAs(TokenHeaderReader.publicApi());
        assertThat(TokenHeaderReader.choose(TokenHeaderReader::inPlaceCandidate).inPlace())
                .isTrue();
    }

    @Test
    void bothReadersReadTheLastTokenHeaderAndRefuseWhatDecodeRefuses() {
        for (TokenHeaderReader reader :
                new TokenHeaderReader[] {TokenHeaderReader.get(), TokenHeaderReader.publicApi()}) {
            assertThat(reader.read(fetched(FenceTokenHeader.encode(3), FenceTokenHeader.encode(7))))
                    .isEqualTo(7);
            assertThat(reader.read(fetched(FenceTokenHeader.encode(7), new byte[] {1, 2})))
                    .isEqualTo(FenceDecision.UNREADABLE_TOKEN);
            assertThat(reader.read(fetched(new byte[8]))).isEqualTo(FenceDecision.UNREADABLE_TOKEN);
            assertThat(reader.read(fetched())).isEqualTo(FenceDecision.MISSING_TOKEN);
            assertThat(reader.read(fetched((byte[]) null))).isEqualTo(FenceDecision.UNREADABLE_TOKEN);
        }
    }

    @Test
    void bothReadersRefuseEightBytesOfTextAndEveryValueAbove2To56Minus1() {
        byte[] consoleProducerText = "00000042".getBytes(StandardCharsets.US_ASCII);
        for (TokenHeaderReader reader :
                new TokenHeaderReader[] {TokenHeaderReader.get(), TokenHeaderReader.publicApi()}) {
            assertThat(reader.read(fetched(consoleProducerText))).isEqualTo(FenceDecision.UNREADABLE_TOKEN);
            assertThat(reader.read(fetched(FenceTokenHeader.encode(7), consoleProducerText)))
                    .isEqualTo(FenceDecision.UNREADABLE_TOKEN);
            assertThat(reader.read(
                            fetched(ByteBuffer.allocate(8).putLong(1L << 56).array())))
                    .isEqualTo(FenceDecision.UNREADABLE_TOKEN);
            assertThat(reader.read(fetched(FenceTokenHeader.encode(FenceTokenHeader.MAX_TOKEN))))
                    .isEqualTo(FenceTokenHeader.MAX_TOKEN);
        }
        assertThat(TokenHeaderReader.get().inPlace()).isTrue(); // the self-check still passes with the bound
    }

    @Test
    void theInPlaceReaderReadsAHeaderSomeoneAlreadyDecoded() {
        RecordHeaders headers = fetched(FenceTokenHeader.encode(41));
        assertThat(headers.lastHeader(FenceTokenHeader.NAME).value()).hasSize(8); // decodes name and value

        assertThat(TokenHeaderReader.get().read(headers)).isEqualTo(41);
    }

    /** Headers as a fetch leaves them: names and values still slices of a buffer. */
    private static RecordHeaders fetched(byte[]... tokenValues) {
        RecordHeaders headers = new RecordHeaders();
        headers.add(new RecordHeader(
                ByteBuffer.wrap("trace".getBytes(StandardCharsets.UTF_8)), ByteBuffer.wrap(new byte[] {9})));
        for (byte[] value : tokenValues) {
            headers.add(new RecordHeader(
                    ByteBuffer.wrap(FenceTokenHeader.NAME.getBytes(StandardCharsets.UTF_8)),
                    value == null ? null : ByteBuffer.wrap(value)));
        }
        return headers;
    }
}
