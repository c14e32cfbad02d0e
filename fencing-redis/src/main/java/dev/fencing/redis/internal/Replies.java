package dev.fencing.redis.internal;

import dev.fencing.redis.FencedRedisWriteException;
import dev.fencing.redis.WriteOutcome;
import java.util.List;

/** Reads the table a fence script replies with: {@code {status, stored token, reply}}. */
final class Replies {
    private Replies() {}

    static WriteOutcome outcome(String op, String key, long token, List<Object> reply) {
        try {
            long status = (Long) reply.get(0);
            long stored = Long.parseLong((String) reply.get(1));
            Object extra = reply.size() > 2 ? reply.get(2) : null;
            if (status == 1) {
                return new WriteOutcome.Applied(token, stored, extra);
            } else if (status == 0) {
                return new WriteOutcome.Rejected(stored, token);
            } else if (status == 2) {
                return new WriteOutcome.PredicateFailed(stored, token, Long.parseLong((String) extra));
            } else if (status == 3) {
                throw new FencedRedisWriteException(
                        "fenced " + op + " of Redis key " + key + " under token " + token + " was sent again after"
                                + " a reconnect (the reply to its first sending never came), and whether it applied"
                                + " is unknown: the first sending may have run, or may still arrive; it was not run"
                                + " again (the stored token is " + stored + "). Read the key before writing again",
                        key,
                        token,
                        null);
            }
        } catch (ClassCastException | NumberFormatException | IndexOutOfBoundsException | NullPointerException e) {
            throw unreadable(op, key, token, reply, e);
        }
        throw unreadable(op, key, token, reply, null);
    }

    private static FencedRedisWriteException unreadable(
            String op, String key, long token, List<Object> reply, Exception cause) {
        return new FencedRedisWriteException(
                "fenced " + op + " of Redis key " + key + " under token " + token
                        + ": unreadable reply from the fence script " + reply,
                key,
                token,
                cause);
    }
}
