package dev.fencing.lock.zookeeper.internal;

import dev.fencing.internal.Text;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Objects;
import org.apache.curator.utils.PathUtils;
import org.apache.curator.utils.ZKPaths;

/**
 * What ZooKeeper locks accept as a lock path and as an election participant id, each refused with a message that
 * names the value without its control characters. A path becomes ZooKeeper nodes, an id their data.
 */
final class LockNames {
    /**
     * The longest participant id, in UTF-8 bytes: it is every node's data, read by every {@link
     * ElectionParticipant#currentLeaderId()}.
     */
    static final int MAX_ID_BYTES = 1024;

    private LockNames() {}

    static void requireValidPath(String path) {
        requireValidPath("", path);
    }

    /** Validates {@code path} as seen through Curator {@code namespace} (empty for none). */
    static void requireValidPath(String namespace, String path) {
        Objects.requireNonNull(path, "lock path");
        if (path.isEmpty()) {
            throw new IllegalArgumentException("lock path must not be empty; use a node such as /locks/<resource>");
        }
        if ("/".equals(path)) {
            throw new IllegalArgumentException(
                    "lock path '/' is the ZooKeeper root; use a node such as /locks/<resource>");
        }
        for (int i = 0; i < path.length(); i++) {
            char c = path.charAt(i);
            if (refusedByZooKeeper(c)) {
                StringBuilder shown = new StringBuilder(path.length());
                path.chars().forEach(d -> shown.append(refusedByZooKeeper((char) d) ? '?' : (char) d));
                throw new IllegalArgumentException(String.format(
                        Locale.ROOT,
                        "lock path '%s' holds \\u%04X at index %d, a character ZooKeeper refuses in a path (controls,"
                                + " surrogates, private use and U+FFF0 to U+FFFF)",
                        shown,
                        (int) c,
                        i));
            }
        }
        try {
            PathUtils.validatePath(path);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("lock path '" + path + "' is invalid: " + e.getMessage(), e);
        }
        String absolute = ZKPaths.fixForNamespace(namespace, path);
        if (absolute.equals(LockParents.HISTORY_ROOT) || absolute.startsWith(LockParents.HISTORY_ROOT + "/")) {
            throw new IllegalArgumentException("lock path '" + path + "' (" + absolute + " in ZooKeeper) is inside "
                    + LockParents.HISTORY_ROOT
                    + ", where the library keeps the history of its lock parents");
        }
    }

    /**
     * The characters ZooKeeper's client refuses in a path. Curator's own check, run first by the recipes, leaves
     * the first and last of each range out (U+001F, U+007F, U+009F, U+D800, U+F8FF, U+FFF0, U+FFFF), so that a
     * path holding one of them failed only at its first create, when the lock was acquired. U+0000 is refused by
     * both, but their message quotes the path with the character in it.
     */
    private static boolean refusedByZooKeeper(char c) {
        return c <= '\u001F' || c >= '\u007F' && c <= '\u009F' || c >= '\uD800' && c <= '\uF8FF' || c >= '\uFFF0';
    }

    /**
     * {@code participantId}, if it is fit for the election at {@code path}: not blank, no half of a surrogate pair
     * nor control character, at most {@value #MAX_ID_BYTES} bytes of UTF-8.
     */
    static String validParticipantId(String path, String participantId) {
        Objects.requireNonNull(participantId, "participantId");
        if (participantId.isBlank()) {
            throw new IllegalArgumentException("participant id for election " + path + " must not be blank, got '"
                    + Text.withoutControls(participantId) + "'");
        }
        requireUtf8(path, participantId);
        requireNoControlCharacters(path, participantId);
        int bytes = participantId.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > MAX_ID_BYTES) {
            // cut after whole characters: half a surrogate pair would print as '?'
            String start = participantId.substring(0, participantId.offsetByCodePoints(0, 40));
            throw new IllegalArgumentException("participant id for election " + path + " is " + bytes
                    + " bytes of UTF-8, more than " + MAX_ID_BYTES + ": '" + start + "...'");
        }
        return participantId;
    }

    /**
     * Refuses an id with half of a surrogate pair (a {@code char} of one without the other), naming it: UTF-8
     * cannot encode it, and Java's encoder writes '?' in its place, so that the node's data, which {@link
     * ElectionParticipant#currentLeaderId()} reads, would hold another id (the same for every id that differs
     * only in such a half).
     */
    private static void requireUtf8(String path, String participantId) {
        int i = Text.firstUnpairedSurrogate(participantId);
        if (i >= 0) {
            // the id as ZooKeeper would get it: the half pair as '?', never in the message itself
            String shown = Text.withoutControls(
                    new String(participantId.getBytes(StandardCharsets.UTF_8), StandardCharsets.UTF_8));
            throw new IllegalArgumentException(String.format(
                    Locale.ROOT,
                    "participant id '%s' for election %s holds half a surrogate pair (\\u%04X at index %d), which"
                            + " UTF-8 cannot encode: ZooKeeper would be sent '?' in its place, another id",
                    shown,
                    path,
                    (int) participantId.charAt(i),
                    i));
        }
    }

    /**
     * Refuses an id with a control character (C0, DEL or C1, {@link Character#isISOControl}), naming its index: the
     * id is part of the participant's thread name and of its INFO log lines, where a line break would forge a line.
     */
    private static void requireNoControlCharacters(String path, String participantId) {
        int i = Text.firstControl(participantId);
        if (i >= 0) {
            throw new IllegalArgumentException(String.format(
                    Locale.ROOT,
                    "participant id '%s' for election %s holds a control character (\\u%04X at index %d);"
                            + " the id goes into thread names and log lines",
                    Text.withoutControls(participantId),
                    path,
                    (int) participantId.charAt(i),
                    i));
        }
    }
}
