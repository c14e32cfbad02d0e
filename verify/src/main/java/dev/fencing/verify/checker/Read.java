package dev.fencing.verify.checker;

import java.util.Locale;
import java.util.Map;

/**
 * One read of the read/write-lock workload as its client's history tells it: a read of a resource's list under a
 * read lock grant's token (see {@link RwLockChecker}). Its lines:
 *
 * <pre>
 * {"type":"invoke","f":"read","op":3000017,"client":3,"resource":"r2","token":46,"time":1712345678901}
 * {"type":"ok","f":"read","op":3000017,"client":3,"resource":"r2","token":46,"time":1712345678907,"seen":12}
 * </pre>
 *
 * @param id the operation's id, unique in the run
 * @param client the client that ran it
 * @param resource the resource whose list it read
 * @param token the read grant's token
 * @param invokeTime when it was invoked (after the grant), epoch ms
 * @param outcome {@link Outcome#OK} when its client returned what it read; {@link Outcome#FAIL} when the client
 *     discarded it as stale; {@link Outcome#INFO} when it does not know, or recorded no completion
 * @param completeTime when the read was returned or discarded: the time read just before the client's last look
 *     at the resource (its check of the stored token in the fenced run), or -1 when no completion was recorded
 * @param seen how many ids of the list the read saw, for an ok read; else -1
 * @param error the client's reason for {@code fail} and {@code info}, else null
 */
public record Read(
        long id,
        int client,
        String resource,
        long token,
        long invokeTime,
        Outcome outcome,
        long completeTime,
        int seen,
        String error) {

    /** "read 3000017 (client 3, r2, read token 46)": how violations name a read. */
    public String describe() {
        return "read " + id + " (client " + client + ", " + resource + ", read token " + token + ")";
    }

    /**
     * One line of a read.
     *
     * @param type {@code invoke}, {@code ok}, {@code fail} or {@code info}
     * @param seen for {@code ok}, how many ids the read saw; else -1
     */
    record Line(
            HistoryEntry.Type type,
            long op,
            int client,
            String resource,
            long token,
            long time,
            int seen,
            String error) {

        /** Whether a line's members are a read rather than an append, a publish or a term event. */
        static boolean isRead(Map<String, Object> members) {
            return "read".equals(members.get("f"));
        }

        /**
         * Reads a line's members.
         *
         * @throws IllegalArgumentException naming what is wrong with them
         */
        static Line of(Map<String, Object> members) {
            HistoryEntry.Type type;
            try {
                type = HistoryEntry.Type.valueOf(
                        String.valueOf(members.get("type")).toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("unknown type '" + members.get("type") + "' of a read");
            }
            long op = whole(members, "op");
            long client = whole(members, "client");
            long token = whole(members, "token");
            long time = whole(members, "time");
            if (op <= 0 || client <= 0 || client > Integer.MAX_VALUE || token <= 0 || time <= 0) {
                throw new IllegalArgumentException("op, client, token and time must be positive (client at most"
                        + " 2^31-1) in a read, got op " + op + ", client " + client + ", token " + token + ", time "
                        + time);
            }
            if (!(members.get("resource") instanceof String resource)) {
                throw new IllegalArgumentException("\"resource\" must be a string, got " + members.get("resource"));
            }
            int seen = -1;
            if (type == HistoryEntry.Type.OK) {
                // fail closed: an ok read that does not say what it saw cannot be checked
                long count = whole(members, "seen");
                if (count < 0 || count > Integer.MAX_VALUE) {
                    throw new IllegalArgumentException("\"seen\" must be a count, got " + count);
                }
                seen = (int) count;
            }
            Object error = members.get("error");
            if (error != null && !(error instanceof String)) {
                throw new IllegalArgumentException("\"error\" must be a string, got " + error);
            }
            return new Line(type, op, (int) client, resource, token, time, seen, (String) error);
        }

        private static long whole(Map<String, Object> members, String name) {
            if (!(members.get(name) instanceof Long number)) {
                throw new IllegalArgumentException("\"" + name + "\" must be a whole number, got " + members.get(name));
            }
            return number;
        }
    }
}
