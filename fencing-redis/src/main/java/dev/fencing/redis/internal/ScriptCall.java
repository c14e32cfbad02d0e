package dev.fencing.redis.internal;

import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.NestedMultiOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.netty.buffer.ByteBuf;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
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
 * and had no reply. An error reply answers a sending: a cluster's {@code MOVED} or {@code ASK}, after which
 * Lettuce writes the call to another node, and {@code NOSCRIPT}, after which the library sends the call as EVAL
 * ({@link #eval} carries the mark over from the EVALSHA whose earlier sending was lost). What the script does
 * with a marked call is in {@link LuaScripts}. A call written again without having reached Redis (a write that
 * failed before the reconnect) is marked too, which fails closed. {@link #toString()} does not encode, so
 * logging the arguments marks nothing.
 */
final class ScriptCall extends CommandArgs<String, String> {
    private final byte[] script;
    private final String[] keys;
    private final String[] args;
    private final int policyAt;
    /** A sending is out and has had no reply yet. */
    private final AtomicBoolean inFlight = new AtomicBoolean();
    /** An earlier sending had no reply: it may have run, or may still arrive. */
    private volatile boolean lostSending;

    private ScriptCall(byte[] script, String[] keys, String[] args, int policyAt, boolean lostSending) {
        super(StringCodec.UTF8);
        this.script = script;
        this.keys = keys;
        this.args = args;
        this.policyAt = policyAt;
        this.lostSending = lostSending;
        fill(this, args);
    }

    /** EVALSHA's arguments: the script's SHA-1 in place of its text. */
    static ScriptCall evalsha(LuaScripts.Script lua, String[] keys, String[] args, int policyAt) {
        return new ScriptCall(lua.sha().getBytes(StandardCharsets.US_ASCII), keys, args, policyAt, false);
    }

    /**
     * EVAL's arguments, after {@code evalsha} was answered NOSCRIPT: marked from its first sending if a sending
     * of the EVALSHA was lost (Redis ran it, then forgot its scripts in a restart or failover).
     */
    static ScriptCall eval(LuaScripts.Script lua, ScriptCall evalsha) {
        return new ScriptCall(
                lua.text().getBytes(StandardCharsets.UTF_8),
                evalsha.keys,
                evalsha.args,
                evalsha.policyAt,
                evalsha.lostSending);
    }

    /** The output to dispatch this call with: an error reply answers the sending in flight. */
    NestedMultiOutput<String, String> output() {
        return new NestedMultiOutput<>(StringCodec.UTF8) {
            @Override
            public void setError(ByteBuffer error) {
                inFlight.set(false);
                super.setError(error);
            }

            @Override
            public void setError(String error) {
                inFlight.set(false);
                super.setError(error);
            }
        };
    }

    @Override
    public void encode(ByteBuf buf) {
        if (inFlight.getAndSet(true)) {
            lostSending = true;
        }
        if (lostSending) {
            marked().encode(buf);
        } else {
            super.encode(buf);
        }
    }

    /** The arguments as text, without encoding them: an encoding counts as a sending. */
    @Override
    public String toString() {
        return "ScriptCall" + List.of(keys) + List.of(args) + (lostSending ? " (sent again)" : "");
    }

    private CommandArgs<String, String> marked() {
        String[] again = args.clone();
        again[policyAt] = again[policyAt].toLowerCase(Locale.ROOT);
        CommandArgs<String, String> resent = new CommandArgs<>(StringCodec.UTF8);
        fill(resent, again);
        return resent;
    }

    private void fill(CommandArgs<String, String> target, String[] values) {
        target.add(script).add(keys.length).addKeys(keys).addValues(values);
    }
}
