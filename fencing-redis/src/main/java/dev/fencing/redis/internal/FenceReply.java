package dev.fencing.redis.internal;

import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.CommandOutput;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * Reads the reply of a library fence script, {@code "status stored [extra]"} in decimal (see {@link
 * LuaScripts}), straight from the reply's bytes: no list, no strings, no boxing on the connection's event loop.
 * Anything else is kept as text and reported as unreadable by {@link Replies}. An error reply answers the
 * call's sending in flight ({@link ScriptCall#answered()}).
 */
final class FenceReply extends CommandOutput<String, String, FenceReply> {
    /** {@link #status} of a reply that is not {@code "status stored [extra]"}. */
    static final int UNREADABLE = -1;

    private final ScriptCall call;
    private int status = UNREADABLE;
    private long stored;
    private long extra;
    private boolean hasExtra;
    private String unreadable = "no reply";
    /** Cleared by {@link #number} on a malformed number. */
    private boolean readable;
    /** The reply was a list (a script of another shape): nothing in it is read. */
    private boolean list;

    FenceReply(ScriptCall call) {
        super(StringCodec.UTF8, null);
        this.call = call;
    }

    @Override
    public FenceReply get() {
        return this;
    }

    int status() {
        return status;
    }

    long stored() {
        return stored;
    }

    boolean hasExtra() {
        return hasExtra;
    }

    long extra() {
        return extra;
    }

    /** The reply, for a message. */
    String text() {
        if (status == UNREADABLE) {
            return unreadable;
        }
        return "\"" + status + " " + stored + (hasExtra ? " " + extra : "") + "\"";
    }

    @Override
    public void set(ByteBuffer bytes) {
        if (bytes == null || list) {
            unreadable = list ? unreadable : "nil";
            status = UNREADABLE;
            return;
        }
        int start = bytes.position();
        if (!parse(bytes)) {
            status = UNREADABLE;
            bytes.position(start);
            unreadable = '"' + StandardCharsets.UTF_8.decode(bytes).toString() + '"';
        }
    }

    /** {@code digit ' ' number [' ' number]}, numbers as Java longs (a number beyond them is unreadable). */
    private boolean parse(ByteBuffer bytes) {
        if (bytes.remaining() < 3) {
            return false;
        }
        int first = bytes.get() - '0';
        if (first < 0 || first > 3 || bytes.get() != ' ') {
            return false;
        }
        readable = true;
        stored = number(bytes);
        if (bytes.hasRemaining()) {
            if (bytes.get() != ' ') {
                return false;
            }
            extra = number(bytes);
            hasExtra = true;
        }
        if (!readable || bytes.hasRemaining()) {
            return false;
        }
        status = first;
        return true;
    }

    /**
     * Reads an optionally negative decimal up to the next space or the end; clears {@link #readable} on
     * anything else.
     */
    private long number(ByteBuffer bytes) {
        boolean negative = bytes.hasRemaining() && bytes.get(bytes.position()) == '-';
        if (negative) {
            bytes.get();
        }
        long value = 0; // negative throughout, so that Long.MIN_VALUE needs no care
        int digits = 0;
        while (bytes.hasRemaining() && bytes.get(bytes.position()) != ' ') {
            int digit = bytes.get() - '0';
            if (digit < 0 || digit > 9 || value < (Long.MIN_VALUE + digit) / 10) {
                readable = false;
                return 0;
            }
            value = value * 10 - digit;
            digits++;
        }
        if (digits == 0 || (!negative && value == Long.MIN_VALUE)) {
            readable = false;
            return 0;
        }
        return negative ? value : -value;
    }

    @Override
    public void set(long integer) {
        if (!list) {
            unreadable = Long.toString(integer);
        }
        status = UNREADABLE;
    }

    @Override
    public void multi(int count) {
        if (!list) {
            unreadable = "a list of " + count;
        }
        list = true;
        status = UNREADABLE;
    }

    @Override
    public void setError(ByteBuffer error) {
        call.answered();
        super.setError(error);
    }

    @Override
    public void setError(String error) {
        call.answered();
        super.setError(error);
    }
}
