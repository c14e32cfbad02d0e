package dev.fencing.kafka.internal;

import dev.fencing.kafka.FenceTokenHeader;
import dev.fencing.kafka.UnreadableFenceTokenException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads the token a record carries in its last {@value FenceTokenHeader#NAME} header, once per record.
 *
 * <p>Through Kafka's public API ({@code Headers.lastHeader}) that decodes each header's name into a new String
 * and copies its value into a new array: per record, more than the rest of the fence decision. A fetched
 * record's headers are {@code RecordHeader}s that still hold the name and value as slices of the fetch buffer
 * until someone asks for them, so the in-place reader compares the name's bytes and reads the eight value bytes
 * where they are. That reaches into Kafka's private fields: the reader is chosen once, at class load, by a
 * self-check that reads headers made every way it must handle and compares with the public API's answers; if
 * the fields are missing or renamed, not accessible, or any answer differs, the public API is used, and a record
 * whose headers are not Kafka's own classes is read through the public API either way.
 *
 * <p>Thread-safe. The returned value is the token (always positive) or {@link FenceDecision#MISSING_TOKEN} or
 * {@link FenceDecision#UNREADABLE_TOKEN}.
 */
public abstract class TokenHeaderReader {
    private static final Logger LOG = LoggerFactory.getLogger(TokenHeaderReader.class);
    private static final byte[] NAME = FenceTokenHeader.NAME.getBytes(StandardCharsets.UTF_8);

    private static final TokenHeaderReader PUBLIC_API = new PublicApi();
    private static final TokenHeaderReader CHOSEN = choose(TokenHeaderReader::inPlaceCandidate);

    TokenHeaderReader() {}

    /** The reader this JVM uses: in place if the self-check passed, else the public API's. */
    public static TokenHeaderReader get() {
        return CHOSEN;
    }

    /** The reader that uses only Kafka's public API. */
    public static TokenHeaderReader publicApi() {
        return PUBLIC_API;
    }

    /** Whether this reader reads Kafka's headers in place. */
    public abstract boolean inPlace();

    /** The record's token, or {@link FenceDecision#MISSING_TOKEN} / {@link FenceDecision#UNREADABLE_TOKEN}. */
    public abstract long read(Headers headers);

    /** The verdict for one header's value, as {@link FenceTokenHeader#decode} judges it. */
    static long decode(byte[] value) {
        try {
            return FenceTokenHeader.decode(value);
        } catch (UnreadableFenceTokenException e) {
            return FenceDecision.UNREADABLE_TOKEN;
        }
    }

    /** Makes a reader to try; may fail as reflection fails. */
    @FunctionalInterface
    interface Candidate {
        TokenHeaderReader make() throws ReflectiveOperationException;
    }

    /** The in-place reader, unchecked. */
    static TokenHeaderReader inPlaceCandidate() throws ReflectiveOperationException {
        return new InPlace();
    }

    /** The candidate if it can be made and passes {@link #selfCheck}; else the public API's reader. */
    static TokenHeaderReader choose(Candidate candidate) {
        try {
            TokenHeaderReader reader = candidate.make();
            String failure = selfCheck(reader);
            if (failure == null) {
                return reader;
            }
            LOG.info("reading {} headers through Kafka's public API: {}", FenceTokenHeader.NAME, failure);
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            LOG.info("reading {} headers through Kafka's public API: {}", FenceTokenHeader.NAME, e.toString());
        }
        return PUBLIC_API;
    }

    /**
     * Null if {@code candidate} answers as the public API does for headers made every way a consumer may see
     * them (fetched slices, slices already decoded by someone, built from a String and an array, several
     * headers of one name, odd values); else what differed.
     */
    static String selfCheck(TokenHeaderReader candidate) {
        byte[] good = FenceTokenHeader.encode(0x00F2030405060708L);
        byte[] text = "00000042".getBytes(StandardCharsets.US_ASCII); // above MAX_TOKEN: unreadable
        byte[] negative = {-1, 2, 3, 4, 5, 6, 7, 8};
        byte[][] values = {
            good,
            new byte[7],
            new byte[9],
            new byte[8],
            null,
            FenceTokenHeader.encode(1),
            text,
            negative,
            FenceTokenHeader.encode(FenceTokenHeader.MAX_TOKEN)
        };
        for (byte[] value : values) {
            for (int shape = 0; shape < 4; shape++) {
                RecordHeaders headers = new RecordHeaders();
                headers.add(new RecordHeader("other", new byte[] {1}));
                headers.add(header(FenceTokenHeader.NAME, FenceTokenHeader.encode(99), shape));
                headers.add(header("fencing-tokem", good, shape));
                headers.add(header(FenceTokenHeader.NAME, value, shape));
                long expected = PUBLIC_API.read(copy(headers, shape));
                long actual = candidate.read(copy(headers, shape));
                if (actual != expected) {
                    return "self-check read " + actual + " where the public API reads " + expected + " (shape " + shape
                            + ")";
                }
            }
        }
        RecordHeaders none = new RecordHeaders();
        none.add(header("other", good, 0));
        if (candidate.read(none) != FenceDecision.MISSING_TOKEN) {
            return "self-check found a token in a record without the header";
        }
        return null;
    }

    /** Shape 0 and 1: as a fetch makes them (1: with a value buffer not at position 0); 2: decoded; 3: built. */
    private static Header header(String name, byte[] value, int shape) {
        if (shape == 3) {
            return new RecordHeader(name, value);
        }
        byte[] nameBytes = name.getBytes(StandardCharsets.UTF_8);
        ByteBuffer nameBuffer = ByteBuffer.allocate(nameBytes.length + 3).position(3);
        nameBuffer.put(nameBytes).flip().position(3);
        ByteBuffer valueBuffer = null;
        if (value != null) {
            valueBuffer = ByteBuffer.allocate(value.length + 5).position(shape == 1 ? 5 : 0);
            valueBuffer = valueBuffer.slice(valueBuffer.position(), value.length);
            valueBuffer.put(value).flip();
        }
        RecordHeader header = new RecordHeader(nameBuffer.slice(), valueBuffer);
        if (shape == 2) {
            header.key();
            header.value();
        }
        return header;
    }

    /** Headers of the same shape again: a read may decode what it reads, and each reader needs its own. */
    private static Headers copy(RecordHeaders headers, int shape) {
        RecordHeaders copy = new RecordHeaders();
        for (Header h : headers) {
            RecordHeader original = (RecordHeader) h;
            copy.add(h.key().equals("other") ? original : header(h.key(), h.value(), shape));
        }
        return copy;
    }

    private static final class PublicApi extends TokenHeaderReader {
        @Override
        public boolean inPlace() {
            return false;
        }

        @Override
        public long read(Headers headers) {
            Header header = headers.lastHeader(FenceTokenHeader.NAME);
            return header == null ? FenceDecision.MISSING_TOKEN : decode(header.value());
        }
    }

    private static final class InPlace extends TokenHeaderReader {
        // Static final, so that the JIT compiles each access to a plain field read. Held in instance fields, every
        // access went through the VarHandle's generic checks: 6% of the consuming thread's samples in bench/run
        // kafka, in VarHandleGuards.
        private static final VarHandle LIST;
        private static final VarHandle KEY_BUFFER;
        private static final VarHandle VALUE_BUFFER;
        /** Why Kafka's fields could not be reached, or null. */
        private static final ReflectiveOperationException UNREACHABLE;

        static {
            VarHandle list = null;
            VarHandle keyBuffer = null;
            VarHandle valueBuffer = null;
            ReflectiveOperationException failure = null;
            try {
                MethodHandles.Lookup headers =
                        MethodHandles.privateLookupIn(RecordHeaders.class, MethodHandles.lookup());
                MethodHandles.Lookup header = MethodHandles.privateLookupIn(RecordHeader.class, MethodHandles.lookup());
                list = headers.findVarHandle(RecordHeaders.class, "headers", List.class);
                keyBuffer = header.findVarHandle(RecordHeader.class, "keyBuffer", ByteBuffer.class);
                valueBuffer = header.findVarHandle(RecordHeader.class, "valueBuffer", ByteBuffer.class);
            } catch (ReflectiveOperationException e) {
                failure = e; // a RuntimeException fails the class's initialization: a LinkageError for choose
            }
            LIST = list;
            KEY_BUFFER = keyBuffer;
            VALUE_BUFFER = valueBuffer;
            UNREACHABLE = failure;
        }

        InPlace() throws ReflectiveOperationException {
            if (UNREACHABLE != null) {
                throw UNREACHABLE;
            }
        }

        @Override
        public boolean inPlace() {
            return true;
        }

        @Override
        public long read(Headers headers) {
            if (headers.getClass() != RecordHeaders.class) {
                return PUBLIC_API.read(headers);
            }
            @SuppressWarnings("unchecked")
            List<Header> all = (List<Header>) LIST.get(headers);
            for (int i = all.size() - 1; i >= 0; i--) {
                Header h = all.get(i);
                if (h.getClass() != RecordHeader.class) {
                    if (FenceTokenHeader.NAME.equals(h.key())) {
                        return decode(h.value());
                    }
                    continue;
                }
                // the name: in place while nobody decoded it (the field is cleared once the String is made)
                ByteBuffer name = (ByteBuffer) KEY_BUFFER.getVolatile(h);
                if (name == null ? !FenceTokenHeader.NAME.equals(h.key()) : !isName(name)) {
                    continue;
                }
                ByteBuffer value = (ByteBuffer) VALUE_BUFFER.getVolatile(h);
                if (value == null) {
                    return decode(h.value()); // decoded already, or no value at all
                }
                if (value.remaining() != FenceTokenHeader.LENGTH) {
                    return FenceDecision.UNREADABLE_TOKEN;
                }
                long token = value.getLong(value.position());
                if (value.order() != ByteOrder.BIG_ENDIAN) {
                    token = Long.reverseBytes(token);
                }
                return token > 0 && token <= FenceTokenHeader.MAX_TOKEN ? token : FenceDecision.UNREADABLE_TOKEN;
            }
            return FenceDecision.MISSING_TOKEN;
        }

        private static boolean isName(ByteBuffer name) {
            int length = name.remaining();
            if (length != NAME.length) {
                return false;
            }
            int at = name.position();
            for (int i = 0; i < length; i++) {
                if (name.get(at + i) != NAME[i]) {
                    return false;
                }
            }
            return true;
        }
    }
}
