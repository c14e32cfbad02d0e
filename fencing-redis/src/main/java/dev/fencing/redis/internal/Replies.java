package dev.fencing.redis.internal;

import dev.fencing.redis.FencedRedisWriteException;
import dev.fencing.redis.WriteOutcome;
import java.util.List;

/**
 * Reads what a fence script replied: the library's scripts a {@link FenceReply} ({@code "status stored
 * [extra]"}), the user's script a table {@code {status, stored, reply}}.
 */
final class Replies {
    private static final int APPLIED = 1;
    private static final int REJECTED = 0;
    private static final int GUARD_FALSE = 2;
    private static final int NOT_RUN_AGAIN = 3;

    private Replies() {}

    static WriteOutcome outcome(String op, String key, long token, FenceReply reply) {
        int status = reply.status();
        if (status == FenceReply.UNREADABLE
                || (status == GUARD_FALSE && !reply.hasExtra())
                || (status != APPLIED && status != GUARD_FALSE && reply.hasExtra())) {
            throw unreadable(op, key, token, reply.text(), null);
        }
        return outcome(op, key, token, status, reply.stored(), reply.hasExtra() ? reply.extra() : null);
    }

    static WriteOutcome outcome(String op, String key, long token, List<Object> reply) {
        try {
            long status = (Long) reply.get(0);
            long stored = Long.parseLong((String) reply.get(1));
            Object extra = reply.size() > 2 ? reply.get(2) : null;
            if (status == GUARD_FALSE) {
                extra = Long.parseLong((String) extra);
            }
            if (status >= REJECTED && status <= NOT_RUN_AGAIN) {
                return outcome(op, key, token, (int) status, stored, extra);
            }
        } catch (ClassCastException | NumberFormatException | IndexOutOfBoundsException | NullPointerException e) {
            throw unreadable(op, key, token, reply, e);
        }
        throw unreadable(op, key, token, reply, null);
    }

    private static WriteOutcome outcome(String op, String key, long token, int status, long stored, Object extra) {
        switch (status) {
            case APPLIED:
                return new WriteOutcome.Applied(token, stored, extra);
            case REJECTED:
                return new WriteOutcome.Rejected(stored, token);
            case GUARD_FALSE:
                return new WriteOutcome.PredicateFailed(stored, token, (Long) extra);
            default:
                throw new FencedRedisWriteException(
                        "fenced " + op + " of Redis key " + FencedKeys.shown(key) + " under token " + token
                                + " was sent again after"
                                + " a reconnect (the reply to its first sending never came), and whether it applied"
                                + " is unknown: the first sending may have run, or may still arrive; it was not run"
                                + " again (the stored token is " + stored + "). Read the key before writing again",
                        key,
                        token,
                        null);
        }
    }

    private static FencedRedisWriteException unreadable(
            String op, String key, long token, Object reply, Exception cause) {
        return new FencedRedisWriteException(
                "fenced " + op + " of Redis key " + FencedKeys.shown(key) + " under token " + token
                        + ": unreadable reply from the fence script " + reply,
                key,
                token,
                cause);
    }
}
