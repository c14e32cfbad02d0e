package dev.fencing.redis.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.protocol.CommandArgs;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class ScriptCallTest {

    private static ScriptCall.Arguments arguments() {
        return new ScriptCall.Arguments(2, 0)
                .key("{sku-42}:stock")
                .key("{sku-42}:stock:fencing-token")
                .number(Long.MAX_VALUE)
                .policy('M')
                .text("ünïcødé")
                .number(Long.MIN_VALUE)
                .number(0)
                .text("");
    }

    private static String encoded(CommandArgs<String, String> args) {
        ByteBuf buf = Unpooled.buffer();
        args.encode(buf);
        return buf.toString(StandardCharsets.UTF_8);
    }

    @Test
    void encodesTheArgumentsAsLettuceWould() {
        CommandArgs<String, String> lettuce = new CommandArgs<>(StringCodec.UTF8)
                .add(LuaScripts.SET.sha().getBytes(StandardCharsets.US_ASCII))
                .add(2)
                .addKeys("{sku-42}:stock", "{sku-42}:stock:fencing-token")
                .addValues(Long.toString(Long.MAX_VALUE), "M", "ünïcødé")
                .add(Long.MIN_VALUE)
                .add(0)
                .addValue("");
        ScriptCall call = ScriptCall.evalsha(LuaScripts.SET, arguments());

        assertThat(encoded(call)).isEqualTo(encoded(lettuce));
        assertThat(call.count()).isEqualTo(lettuce.count());
        assertThat(call.getFirstEncodedKey()).isEqualTo(lettuce.getFirstEncodedKey());
    }

    @Test
    void aSecondSendingWithoutAReplyIsMarkedAndAnErrorReplyAnswersTheFirst() {
        ScriptCall call = ScriptCall.evalsha(LuaScripts.SET, arguments());
        assertThat(encoded(call)).contains("$1\r\nM\r\n");

        call.answered(); // MOVED: the same call to another node is not a resend
        assertThat(encoded(call)).contains("$1\r\nM\r\n");

        String again = encoded(call);
        assertThat(again).contains("$1\r\nm\r\n").doesNotContain("$1\r\nM\r\n");
        assertThat(encoded(ScriptCall.eval(LuaScripts.SET, call)))
                .startsWith("$" + LuaScripts.SET.text().getBytes(StandardCharsets.UTF_8).length + "\r\n")
                .contains("$1\r\nm\r\n");
    }

    @Test
    void renderingTheArgumentsEncodesNothing() {
        ScriptCall call = ScriptCall.evalsha(LuaScripts.SET, arguments());

        assertThat(call.toString())
                .isEqualTo("ScriptCall[{sku-42}:stock, {sku-42}:stock:fencing-token][" + Long.MAX_VALUE
                        + ", M, ünïcødé, " + Long.MIN_VALUE + ", 0, ]");
        assertThat(call.toCommandString()).isEqualTo(call.toString());
        assertThat(encoded(call)).contains("$1\r\nM\r\n");
    }
}
