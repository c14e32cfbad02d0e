package dev.fencing.redis.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.redis.FencedRedisWriteException;
import dev.fencing.redis.WriteOutcome;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class FenceReplyTest {

    private static WriteOutcome read(String reply) {
        FenceReply output = new FenceReply(ScriptCall.evalsha(
                LuaScripts.SET,
                new ScriptCall.Arguments(1, 0).key("k").number(7).policy('S')));
        output.set(ByteBuffer.wrap(reply.getBytes(StandardCharsets.UTF_8)));
        return Replies.outcome("SET", "k", 7, output);
    }

    @Test
    void readsEachOutcomeWithTheStoredToken() {
        assertThat(read("1 0")).isEqualTo(new WriteOutcome.Applied(7, 0, null));
        assertThat(read("1 " + Long.MAX_VALUE + " -9007199254740992"))
                .isEqualTo(new WriteOutcome.Applied(7, Long.MAX_VALUE, -9007199254740992L));
        assertThat(read("0 9")).isEqualTo(new WriteOutcome.Rejected(9, 7));
        assertThat(read("2 6 -3")).isEqualTo(new WriteOutcome.PredicateFailed(6, 7, -3));
        assertThatThrownBy(() -> read("3 6"))
                .isInstanceOf(FencedRedisWriteException.class)
                .hasMessageContaining("sent again")
                .hasMessageContaining("the stored token is 6");
    }

    @Test
    void anythingElseIsUnreadableAndNamesTheReply() {
        for (String reply : new String[] {
            "", "1", "1 ", "4 1", "1 x", "1 1 ", "1  1", "0 1 2", "2 1", "1 -", "1 9223372036854775808", "1 1 2 3"
        }) {
            assertThatThrownBy(() -> read(reply))
                    .as(reply)
                    .isInstanceOf(FencedRedisWriteException.class)
                    .hasMessageContaining("unreadable reply")
                    .hasMessageContaining("\"" + reply + "\"");
        }
    }

    @Test
    void aListIsUnreadableEvenIfAnElementLooksLikeAReply() {
        FenceReply output = new FenceReply(ScriptCall.evalsha(
                LuaScripts.SET,
                new ScriptCall.Arguments(1, 0).key("k").number(7).policy('S')));
        output.multi(1);
        output.set(ByteBuffer.wrap("1 0".getBytes(StandardCharsets.UTF_8)));

        assertThatThrownBy(() -> Replies.outcome("SET", "k", 7, output)).hasMessageContaining("a list of 1");
    }
}
