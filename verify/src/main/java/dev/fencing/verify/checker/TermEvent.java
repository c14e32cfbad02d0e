package dev.fencing.verify.checker;

import java.util.Locale;
import java.util.Map;

/**
 * One line of an election participant's history that is not a write: the grant of a term, or a reading of the
 * term's validity taken before a write (see {@link ElectionChecker}).
 *
 * <pre>
 * {"type":"ok","f":"grant","op":3000016,"client":3,"resource":"r1","token":45,"time":1712345678890}
 * {"type":"ok","f":"check","op":3000017,"client":3,"resource":"r1","token":45,"time":1712345678900,"valid":true}
 * </pre>
 *
 * @param kind a grant, or a validity reading
 * @param op for a grant, an id of its own; for a reading, the id of the write that follows it
 * @param client the participant
 * @param resource the election (and the row its leaders write)
 * @param token the term's token
 * @param time for a grant, when the participant learned it leads (epoch ms, read after the grant returned); for a
 *     reading, when the check began (read before the check)
 * @param valid what the check answered; true for a grant
 * @param joined for a grant that follows an earlier grant in its participant's file, the time of the line just
 *     before it (epoch ms): the participant joins the election again only after its last term's last line, and a
 *     term's token is fixed when it joins, so this bounds the grant's token from below in time; 0 otherwise (a
 *     participant's first term: it may have joined long before its grant)
 */
public record TermEvent(
        Kind kind, long op, int client, String resource, long token, long time, boolean valid, long joined) {

    /** A line with no known time of joining (a reading, or a participant's first grant). */
    public TermEvent(Kind kind, long op, int client, String resource, long token, long time, boolean valid) {
        this(kind, op, client, resource, token, time, valid, 0);
    }

    /** The {@code f} of the line. */
    public enum Kind {
        GRANT,
        CHECK;

        public String label() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** Whether a line's members are a term event rather than an append or a publish. */
    static boolean isTermEvent(Map<String, Object> members) {
        Object function = members.get("f");
        return Kind.GRANT.label().equals(function) || Kind.CHECK.label().equals(function);
    }

    /**
     * Reads a line's members.
     *
     * @throws IllegalArgumentException naming what is wrong with them
     */
    static TermEvent of(Map<String, Object> members) {
        Kind kind = Kind.valueOf(((String) members.get("f")).toUpperCase(Locale.ROOT));
        long op = whole(members, "op");
        long client = whole(members, "client");
        Object resource = members.get("resource");
        long token = whole(members, "token");
        long time = whole(members, "time");
        if (op <= 0 || client <= 0 || client > Integer.MAX_VALUE || token <= 0 || time <= 0) {
            throw new IllegalArgumentException(
                    "op, client, token and time must be positive (client at most 2^31-1) in a " + kind.label()
                            + ", got op " + op + ", client " + client + ", token " + token + ", time " + time);
        }
        if (!(resource instanceof String name)) {
            throw new IllegalArgumentException("\"resource\" must be a string, got " + resource);
        }
        boolean valid = true;
        if (kind == Kind.CHECK) {
            if (!(members.get("valid") instanceof Boolean answer)) {
                // fail closed: a reading that says nothing cannot be taken for either answer
                throw new IllegalArgumentException(
                        "a check needs \"valid\": true or false, got " + members.get("valid"));
            }
            valid = answer;
        }
        return new TermEvent(kind, op, (int) client, name, token, time, valid);
    }

    /** This grant, with {@code time} as the time of its participant's line before it. */
    TermEvent joinedAfter(long time) {
        return new TermEvent(kind, op, client, resource, token, this.time, valid, time);
    }

    /** "client 3's term 45 of r1": how violations name a term. */
    String describeTerm() {
        return "client " + client + "'s term " + token + " of " + resource;
    }

    private static long whole(Map<String, Object> members, String name) {
        if (!(members.get(name) instanceof Long number)) {
            throw new IllegalArgumentException("\"" + name + "\" must be a whole number, got " + members.get(name));
        }
        return number;
    }
}
