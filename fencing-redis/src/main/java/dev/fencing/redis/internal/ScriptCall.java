package dev.fencing.redis.internal;

import dev.fencing.internal.Text;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.CommandOutput;
import io.lettuce.core.output.NestedMultiOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.netty.buffer.ByteBuf;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The arguments of one EVALSHA or EVAL of a fence script, which tell the script whether an earlier sending of
 * the same call may have run. Lettuce encodes a command each time it writes it to a connection, and with {@code
 * autoReconnect} (its default) it writes a command again after a reconnect when the reply had not come: the
 * script may then have run already (or its first sending may still be on its way, behind a proxy), and a
 * second run would apply a {@code MONOTONIC} write twice (a guarded decrement taken twice) or report a {@code
 * STRICT} write refused by its own first run.
 *
 * <p>So a sending is marked, the policy in lower case ({@code s}, {@code m}), when an earlier sending is out
 * and had no reply. An error reply answers a sending ({@link #answered()}, which the outputs call): a cluster's
 * {@code MOVED} or {@code ASK}, after which Lettuce writes the call to another node, and {@code NOSCRIPT}, after
 * which the library sends the call as EVAL ({@link #eval} carries the mark over from the EVALSHA whose earlier
 * sending was lost). What the script does with a marked call is in {@link LuaScripts}. A call written again
 * without having reached Redis (a write that failed before the reconnect) is marked too, which fails closed.
 * {@link #toString()} does not encode, so logging the arguments marks nothing.
 */
final class ScriptCall extends CommandArgs<String, String> {
    private static final byte[] LOAD = "$4\r\nLOAD\r\n".getBytes(StandardCharsets.US_ASCII);
    private final byte[] script;
    private final Arguments arguments;
    /** A sending is out and has had no reply yet. */
    private final AtomicBoolean inFlight = new AtomicBoolean();
    /** An earlier sending had no reply: it may have run, or may still arrive. */
    private volatile boolean lostSending;
    /** The output of a call whose reply is a table, once {@link #tableOutput()} made it; null otherwise. */
    private volatile TableOutput table;

    private ScriptCall(byte[] script, Arguments arguments, boolean lostSending) {
        super(StringCodec.UTF8);
        if (arguments.policyAt < 0 || arguments.keysLeft != 0) {
            throw new IllegalStateException("a fence script call needs its keys and its policy: " + arguments);
        }
        this.script = script;
        this.arguments = arguments;
        this.lostSending = lostSending;
    }

    /** EVALSHA's arguments: the script's SHA-1 in place of its text. */
    static ScriptCall evalsha(LuaScripts.Script lua, Arguments arguments) {
        return new ScriptCall(lua.encodedSha(), arguments, false);
    }

    /**
     * EVAL's arguments, after {@code evalsha} was answered NOSCRIPT: marked from its first sending if a sending
     * of the EVALSHA was lost (Redis ran it, then forgot its scripts in a restart or failover).
     */
    static ScriptCall eval(LuaScripts.Script lua, ScriptCall evalsha) {
        return new ScriptCall(lua.encodedText(), evalsha.arguments, evalsha.lostSending);
    }

    /**
     * {@code SCRIPT LOAD} of the script, keyed by the call's first key. A cluster's loads do not go this way: the
     * node the client routes the key to is not always the one that answered {@code NOSCRIPT} (see {@code
     * AsyncFencedRedis#load}).
     */
    static CommandArgs<String, String> load(LuaScripts.Script lua, Arguments arguments) {
        byte[] text = lua.encodedText();
        return new CommandArgs<>(StringCodec.UTF8) {
            @Override
            public int count() {
                return 2;
            }

            @Override
            public ByteBuffer getFirstEncodedKey() {
                return ByteBuffer.wrap(arguments.firstKey.getBytes(StandardCharsets.UTF_8));
            }

            @Override
            public void encode(ByteBuf buf) {
                buf.writeBytes(LOAD);
                buf.writeBytes(text);
            }

            @Override
            public String toString() {
                return "SCRIPT LOAD for " + arguments;
            }
        };
    }

    /** An error reply answered the sending in flight: writing the call again is not a resend. */
    void answered() {
        inFlight.set(false);
    }

    /** The output for a script whose reply is a Lua table (the user's script under the fence); one per call. */
    TableOutput tableOutput() {
        TableOutput output = new TableOutput();
        table = output;
        return output;
    }

    /**
     * The output of a script whose reply is a Lua table. Lettuce decodes a table element by element as its bytes
     * arrive, and writes a command again into the same output: the first elements of a reply cut off by a lost
     * connection would stay in front of the next sending's reply (its status taken for the first run's, its
     * reply lost). So each sending after the first starts an empty table ({@link #restart}, from {@link #encode},
     * which runs before any byte of that sending's reply can be decoded).
     */
    final class TableOutput extends CommandOutput<String, String, List<Object>> {
        private volatile NestedMultiOutput<String, String> reply = new NestedMultiOutput<>(StringCodec.UTF8);
        /**
         * The sending's reply is a table: an error now is one of its elements (a body's {@code error_reply}),
         * which does not answer the sending, for the rest of the table may still be lost.
         */
        private volatile boolean inTable;
        /** The first error element of the sending's table, or null. */
        private volatile String errorInTable;

        private TableOutput() {
            super(StringCodec.UTF8, null);
        }

        private void restart() {
            inTable = false;
            errorInTable = null;
            reply = new NestedMultiOutput<>(StringCodec.UTF8);
        }

        /**
         * The first error element of the table (Lettuce fails the whole call on one, though the script ran to
         * its end), or null.
         */
        String errorInTable() {
            return errorInTable;
        }

        /** The table as decoded so far, also after an error element failed the call. */
        List<Object> table() {
            return reply.get();
        }

        @Override
        public List<Object> get() {
            return reply.get();
        }

        @Override
        public void set(ByteBuffer bytes) {
            reply.set(bytes);
        }

        @Override
        public void setSingle(ByteBuffer bytes) {
            reply.setSingle(bytes);
        }

        @Override
        public void setBigNumber(ByteBuffer bytes) {
            reply.setBigNumber(bytes);
        }

        @Override
        public void set(long integer) {
            reply.set(integer);
        }

        @Override
        public void set(double number) {
            reply.set(number);
        }

        @Override
        public void set(boolean value) {
            reply.set(value);
        }

        @Override
        public void setError(ByteBuffer error) {
            if (!inTable) {
                answered();
            } else if (errorInTable == null) {
                errorInTable = StandardCharsets.UTF_8.decode(error.duplicate()).toString();
            }
            reply.setError(error);
        }

        @Override
        public void setError(String error) {
            if (!inTable) {
                answered();
            } else if (errorInTable == null) {
                errorInTable = error;
            }
            reply.setError(error);
        }

        @Override
        public boolean hasError() {
            return reply.hasError();
        }

        @Override
        public String getError() {
            return reply.getError();
        }

        @Override
        public void complete(int depth) {
            reply.complete(depth);
        }

        @Override
        public void multi(int count) {
            inTable = true;
            reply.multi(count);
        }

        @Override
        public void multiArray(int count) {
            inTable = true;
            reply.multiArray(count);
        }

        @Override
        public void multiPush(int count) {
            inTable = true;
            reply.multiPush(count);
        }

        @Override
        public void multiMap(int count) {
            inTable = true;
            reply.multiMap(count);
        }

        @Override
        public void multiSet(int count) {
            inTable = true;
            reply.multiSet(count);
        }

        @Override
        public String toString() {
            return reply.toString();
        }
    }

    @Override
    public int count() {
        return 1 + arguments.count;
    }

    /** The first key, for Lettuce's cluster routing (the arguments are not kept as Lettuce's own). */
    @Override
    public ByteBuffer getFirstEncodedKey() {
        return ByteBuffer.wrap(arguments.firstKey.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * Writes the arguments encoded when the call was made; a sending after a lost one gets the policy in lower
     * case. Runs on the connection's event loop, which is where a pipelined writer's time goes, so nothing is
     * encoded here.
     */
    @Override
    public void encode(ByteBuf buf) {
        if (inFlight.getAndSet(true)) {
            lostSending = true;
            TableOutput output = table;
            if (output != null) {
                output.restart();
            }
        }
        buf.writeBytes(script);
        byte[] bytes = arguments.bytes;
        if (lostSending) {
            int at = arguments.policyAt;
            buf.writeBytes(bytes, 0, at);
            buf.writeByte(Character.toLowerCase(bytes[at]));
            buf.writeBytes(bytes, at + 1, arguments.size - at - 1);
        } else {
            buf.writeBytes(bytes, 0, arguments.size);
        }
    }

    /** The arguments as text, without encoding them: an encoding counts as a sending. */
    @Override
    public String toString() {
        return "ScriptCall" + arguments + (lostSending ? " (sent again)" : "");
    }

    @Override
    public String toCommandString() {
        return toString();
    }

    /**
     * A script's keys and arguments in Redis's protocol (after the script: its key count, then bulk strings),
     * encoded once, on the caller's thread. Add the keys first, then the arguments; one of them is the policy.
     */
    static final class Arguments {
        private byte[] bytes;
        private int size;
        private int count;
        private int keysLeft;
        private int policyAt = -1;
        private String firstKey;

        Arguments(int keys, int capacity) {
            this.bytes = new byte[capacity + 16 * keys + 48];
            this.keysLeft = keys;
            number(keys);
        }

        Arguments key(String key) {
            if (keysLeft-- <= 0) {
                throw new IllegalStateException("more keys than announced: " + key);
            }
            if (firstKey == null) {
                firstKey = key;
            }
            return text(key);
        }

        /**
         * @throws IllegalArgumentException naming the text, if it holds a UTF-16 surrogate without its pair: UTF-8
         *     has no encoding for one ({@code getBytes} would send {@code ?} in its place, so that two keys, two
         *     fields or a value and its stored copy would differ in Java and be one in Redis)
         */
        Arguments text(String text) {
            requireEncodable(text);
            byte[] utf8 = text.getBytes(StandardCharsets.UTF_8);
            header(utf8.length);
            ensure(utf8.length + 2);
            System.arraycopy(utf8, 0, bytes, size, utf8.length);
            size += utf8.length;
            return crlf();
        }

        private void requireEncodable(String text) {
            int i = Text.firstUnpairedSurrogate(text);
            if (i >= 0) {
                throw new IllegalArgumentException("'" + FencedKeys.shown(escaped(text)) + "'"
                        + (firstKey == null || firstKey.equals(text)
                                ? ""
                                : " (for Redis key '" + FencedKeys.shown(escaped(firstKey)) + "')")
                        + " holds an unpaired UTF-16 surrogate \\u"
                        + Integer.toHexString(text.charAt(i)).toUpperCase(Locale.ROOT)
                        + " at index " + i + ", which UTF-8 cannot encode; nothing was sent");
            }
        }

        /** The text with each unpaired surrogate written as a Java escape (backslash, u, four hex digits). */
        private static String escaped(String text) {
            StringBuilder out = new StringBuilder(text.length() + 8);
            for (int i = 0; i < text.length(); i++) {
                char c = text.charAt(i);
                if (Text.unpairedSurrogateAt(text, i)) {
                    out.append("\\u").append(Integer.toHexString(c).toUpperCase(Locale.ROOT));
                } else {
                    out.append(c);
                }
            }
            return out.toString();
        }

        Arguments number(long number) {
            int length = digits(number);
            header(length);
            ensure(length + 2);
            writeDigits(number, length);
            return crlf();
        }

        /** {@code S} or {@code M}; the byte a resend turns to lower case. */
        Arguments policy(char policy) {
            header(1);
            ensure(3);
            policyAt = size;
            bytes[size++] = (byte) policy;
            return crlf();
        }

        private void header(int length) {
            count++;
            int digits = digits(length);
            ensure(digits + 3);
            bytes[size++] = '$';
            writeDigits(length, digits);
            crlf();
        }

        private Arguments crlf() {
            bytes[size++] = '\r';
            bytes[size++] = '\n';
            return this;
        }

        private void ensure(int more) {
            if (size + more > bytes.length) {
                bytes = Arrays.copyOf(bytes, Math.max(bytes.length * 2, size + more));
            }
        }

        private static int digits(long number) {
            int digits = number < 0 ? 2 : 1;
            for (long rest = Math.abs(number / 10); rest != 0; rest /= 10) {
                digits++;
            }
            return digits;
        }

        /** Negative numbers are handled as such throughout, so that {@code Long.MIN_VALUE} needs no care. */
        private void writeDigits(long number, int digits) {
            long rest = number < 0 ? number : -number;
            int at = size + digits;
            do {
                bytes[--at] = (byte) ('0' - rest % 10);
                rest /= 10;
            } while (rest != 0);
            if (number < 0) {
                bytes[--at] = '-';
            }
            size += digits;
        }

        /** The keys, then the arguments, read back from the encoding, each as {@link FencedKeys#shown} shows it. */
        @Override
        public String toString() {
            List<String> values = new ArrayList<>();
            int at = 0;
            while (at < size) {
                int end = at + 1;
                int length = 0;
                while (bytes[end] != '\r') {
                    length = length * 10 + bytes[end++] - '0';
                }
                values.add(FencedKeys.shown(new String(bytes, end + 2, length, StandardCharsets.UTF_8)));
                at = end + 2 + length + 2;
            }
            if (values.isEmpty()) {
                return "[]";
            }
            int keys = Integer.parseInt(values.get(0));
            int keysEnd = Math.min(values.size(), 1 + keys);
            return values.subList(1, keysEnd).toString() + values.subList(keysEnd, values.size());
        }
    }
}
