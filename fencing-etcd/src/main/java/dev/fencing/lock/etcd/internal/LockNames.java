package dev.fencing.lock.etcd.internal;

import dev.fencing.internal.Text;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Objects;

/**
 * What etcd locks accept as a key prefix, a lock name and an election participant id, each refused with a message
 * that names the value (its control characters shown as '?'). A prefix and a name become key bytes, an id a key's
 * value: each must have a UTF-8 form, or Java's encoder would send another string's bytes.
 */
public final class LockNames {
    /** The longest participant id, in bytes of UTF-8. */
    static final int MAX_PARTICIPANT_ID_BYTES = 1024;
    /**
     * The longest lock name, in bytes of UTF-8. The name goes into every key of the lock, and the transaction that
     * creates a key carries it seven times: etcd refuses a name of about 250 KB under its default request limit of
     * 1.5 MiB, less under a lower one, and only once an acquire has been granted a lease.
     */
    static final int MAX_NAME_BYTES = 1024;

    private LockNames() {}

    /** Refuses a prefix that is blank, starts or ends with '/', holds '//', whitespace, controls or half a pair. */
    public static void requireValidPrefix(String prefix) {
        Objects.requireNonNull(prefix, "prefix");
        String shown = Text.withoutControls(prefix);
        if (prefix.isBlank()) {
            throw new IllegalArgumentException("prefix '" + shown + "' must not be blank");
        }
        if (prefix.startsWith("/") || prefix.endsWith("/") || prefix.contains("//")) {
            throw new IllegalArgumentException("prefix '" + shown + "' must not start or end with '/' or hold an"
                    + " empty segment ('//'); use a prefix such as fencing/locks");
        }
        if (prefix.chars().anyMatch(c -> Character.isISOControl(c) || Character.isWhitespace(c))) {
            throw new IllegalArgumentException("prefix '" + shown + "' contains whitespace or control characters");
        }
        requireUtf8("prefix", prefix, "");
    }

    /**
     * Refuses a lock name that is blank, longer than {@value #MAX_NAME_BYTES} bytes of UTF-8, or holds '/', control
     * characters or half a surrogate pair.
     */
    static void requireValidName(String name) {
        Objects.requireNonNull(name, "lock name");
        if (name.isBlank()) {
            throw new IllegalArgumentException("lock name must not be blank, got '" + Text.withoutControls(name) + "'");
        }
        // before the other checks, whose messages show the whole name
        int bytes = name.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > MAX_NAME_BYTES) {
            // cut after whole characters: half a surrogate pair would print as '?'
            String start = name.substring(0, name.offsetByCodePoints(0, 40));
            throw new IllegalArgumentException("lock name '" + Text.withoutControls(start) + "...' is " + bytes
                    + " bytes of UTF-8, more than " + MAX_NAME_BYTES + "; etcd would refuse its keys");
        }
        String shown = Text.withoutControls(name);
        if (name.indexOf('/') >= 0) {
            // a name with '/' would put its contenders' keys under another lock's range (a/b/ under a/)
            throw new IllegalArgumentException(
                    "lock name '" + shown + "' contains '/'; use a name such as sku-42 (the prefix holds the path)");
        }
        if (Text.firstControl(name) >= 0) {
            throw new IllegalArgumentException("lock name '" + shown + "' contains control characters");
        }
        requireUtf8("lock name", name, "");
    }

    /**
     * Refuses a participant id of the election at {@code electionPath} that is blank, holds a control character or
     * half a surrogate pair, or is longer than {@value #MAX_PARTICIPANT_ID_BYTES} bytes of UTF-8.
     */
    static void requireValidParticipantId(String participantId, String electionPath) {
        Objects.requireNonNull(participantId, "participantId");
        if (participantId.isBlank()) {
            throw new IllegalArgumentException("participantId for election " + electionPath
                    + " must not be blank, got '" + Text.withoutControls(participantId) + "'");
        }
        // the id goes into the participant's thread name and INFO log lines, where a line break would forge a line
        int control = Text.firstControl(participantId);
        if (control >= 0) {
            throw new IllegalArgumentException(String.format(
                    Locale.ROOT,
                    "participantId '%s' for election %s holds a control character (\\u%04X at index %d);"
                            + " the id goes into thread names and log lines",
                    Text.withoutControls(participantId),
                    electionPath,
                    (int) participantId.charAt(control),
                    control));
        }
        requireUtf8("participantId", participantId, " for election " + electionPath);
        int bytes = participantId.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > MAX_PARTICIPANT_ID_BYTES) {
            // cut after whole characters: half a surrogate pair would print as '?'
            String start = participantId.substring(0, participantId.offsetByCodePoints(0, 40));
            throw new IllegalArgumentException("participantId for election " + electionPath + " is " + bytes
                    + " bytes of UTF-8, more than " + MAX_PARTICIPANT_ID_BYTES + ": '" + start + "...'");
        }
    }

    /**
     * Refuses a string with half of a surrogate pair (a {@code char} of one without the other), naming it: UTF-8
     * cannot encode it, and Java's encoder sends '?' in its place, so that etcd would get another string's bytes
     * (two lock names would be one lock, a participant's key would hold another id).
     */
    private static void requireUtf8(String what, String value, String context) {
        int i = Text.firstUnpairedSurrogate(value);
        if (i >= 0) {
            // the value as etcd would get it: the half pair as '?', never in the message itself
            String shown =
                    Text.withoutControls(new String(value.getBytes(StandardCharsets.UTF_8), StandardCharsets.UTF_8));
            throw new IllegalArgumentException(String.format(
                    Locale.ROOT,
                    "%s '%s'%s holds half a surrogate pair (\\u%04X at index %d), which UTF-8 cannot encode:"
                            + " etcd would be sent '?' in its place, another name's bytes",
                    what,
                    shown,
                    context,
                    (int) value.charAt(i),
                    i));
        }
    }
}
