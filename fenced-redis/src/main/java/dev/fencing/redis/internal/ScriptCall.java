package dev.fencing.redis.internal;

import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.protocol.CommandArgs;
import io.netty.buffer.ByteBuf;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The arguments of one EVALSHA or EVAL of a fence script, which tell the script whether this is the call's
 * first sending. Lettuce encodes a command each time it writes it to a connection, and with {@code
 * autoReconnect} (its default) it writes a command again after a reconnect when the reply had not come: the
 * script may then have run already, and a second run would apply a {@code MONOTONIC} write twice (a guarded
 * decrement taken twice) or report a {@code STRICT} write refused by its own first run. So every encoding after
 * the first sends the policy in lower case ({@code s}, {@code m}), and the script runs such a call only when
 * the stored token is below the offered one, which proves that the first run did not apply (see {@link
 * LuaScripts}). A call written again without having reached Redis (a write that failed before the reconnect)
 * is marked too: it is then refused as possibly run, which fails closed.
 */
final class ScriptCall extends CommandArgs<String, String> {
    private final byte[] script;
    private final String[] keys;
    private final String[] args;
    private final int policyAt;
    private final AtomicBoolean encoded = new AtomicBoolean();

    private ScriptCall(byte[] script, String[] keys, String[] args, int policyAt) {
        super(StringCodec.UTF8);
        this.script = script;
        this.keys = keys;
        this.args = args;
        this.policyAt = policyAt;
        fill(this, args);
    }

    /** EVALSHA's arguments: the script's SHA-1 in place of its text. */
    static ScriptCall evalsha(LuaScripts.Script lua, String[] keys, String[] args, int policyAt) {
        return new ScriptCall(lua.sha().getBytes(StandardCharsets.US_ASCII), keys, args, policyAt);
    }

    /** EVAL's arguments, for a server that does not have the script cached. */
    static ScriptCall eval(LuaScripts.Script lua, String[] keys, String[] args, int policyAt) {
        return new ScriptCall(lua.text().getBytes(StandardCharsets.UTF_8), keys, args, policyAt);
    }

    @Override
    public void encode(ByteBuf buf) {
        if (encoded.compareAndSet(false, true)) {
            super.encode(buf);
            return;
        }
        String[] again = args.clone();
        again[policyAt] = again[policyAt].toLowerCase(Locale.ROOT);
        CommandArgs<String, String> resent = new CommandArgs<>(StringCodec.UTF8);
        fill(resent, again);
        resent.encode(buf);
    }

    private void fill(CommandArgs<String, String> target, String[] values) {
        target.add(script).add(keys.length).addKeys(keys).addValues(values);
    }
}
