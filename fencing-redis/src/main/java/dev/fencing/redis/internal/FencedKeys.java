package dev.fencing.redis.internal;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/**
 * Names token keys and checks keys and values before anything is sent. Pure functions of the text; no
 * I/O.
 */
public final class FencedKeys {
    public static final String TOKEN_KEY_SUFFIX = ":fencing-token";
    /** Lua numbers are doubles: integers are exact up to this magnitude. */
    public static final long EXACT_LIMIT = 1L << 53;

    private final boolean clusterKeys;
    private final int maxValueBytes;
    private final int maxKeyBytes;
    /** The server's {@code proto-max-bulk-len}: the longest single argument (key, value, field) Redis takes. */
    private final long maxBulkBytes;

    public FencedKeys(boolean clusterKeys, int maxValueBytes, int maxKeyBytes) {
        this(clusterKeys, maxValueBytes, maxKeyBytes, BulkLimit.DEFAULT);
    }

    public FencedKeys(boolean clusterKeys, int maxValueBytes, int maxKeyBytes, long maxBulkBytes) {
        this.clusterKeys = clusterKeys;
        this.maxValueBytes = maxValueBytes;
        this.maxKeyBytes = maxKeyBytes;
        this.maxBulkBytes = maxBulkBytes;
    }

    /** The longest key or value (UTF-8 bytes) a message shows whole. */
    public static final int SHOWN_WHOLE_BYTES = 200;
    /** How many UTF-8 bytes (at most, cut back to a whole character) a message shows of a longer one. */
    public static final int SHOWN_PREFIX_BYTES = 64;

    public static String tokenKey(String key) {
        return key + TOKEN_KEY_SUFFIX;
    }

    /**
     * A key or value as every message and log line of the library shows it: whole up to {@value
     * #SHOWN_WHOLE_BYTES} UTF-8 bytes; a longer one as its first {@value #SHOWN_PREFIX_BYTES} bytes (cut back
     * to a whole character), then {@code "... (N bytes, sha1 H)"}, H the first 12 hex digits of the SHA-1 of
     * its UTF-8 bytes, which {@code redis-cli --eval} or a script's {@code redis.sha1hex} gives too. The fence
     * scripts show a key in their errors the same way ({@code fencing_shown} in {@link LuaScripts}).
     */
    public static String shown(String text) {
        if (text == null || text.length() * 3L <= SHOWN_WHOLE_BYTES) {
            return text;
        }
        byte[] utf8 = text.getBytes(StandardCharsets.UTF_8);
        if (utf8.length <= SHOWN_WHOLE_BYTES) {
            return text;
        }
        int cut = SHOWN_PREFIX_BYTES;
        while (cut > 0 && (utf8[cut] & 0xC0) == 0x80) {
            cut--;
        }
        byte[] sha1;
        try {
            sha1 = MessageDigest.getInstance("SHA-1").digest(utf8);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform has SHA-1", e);
        }
        return new String(utf8, 0, cut, StandardCharsets.UTF_8) + "... (" + utf8.length + " bytes, sha1 "
                + HexFormat.of().formatHex(sha1, 0, 6) + ")";
    }

    /**
     * The hash tag of {@code key} as Redis Cluster reads it: the text between the first {@code {} and the
     * first {@code }} after it, if that is not empty; otherwise {@code null} (the whole key is hashed).
     */
    public static String hashTag(String key) {
        int open = key.indexOf('{');
        if (open < 0) {
            return null;
        }
        int close = key.indexOf('}', open + 1);
        if (close <= open + 1) {
            return null;
        }
        return key.substring(open + 1, close);
    }

    /** Checks a fenced key and returns its token key. */
    public String check(String key) {
        if (key == null || key.isEmpty()) {
            throw new IllegalArgumentException("a fenced Redis key must not be " + (key == null ? "null" : "empty"));
        }
        if (key.endsWith(TOKEN_KEY_SUFFIX)) {
            throw new IllegalArgumentException("Redis key '" + shown(key) + "' ends with '" + TOKEN_KEY_SUFFIX
                    + "', the suffix of token keys: a token key is written by the fence only");
        }
        checkKeySize(key, TOKEN_KEY_SUFFIX.length());
        if (clusterKeys && hashTag(key) == null) {
            throw new IllegalArgumentException("Redis key '" + shown(key) + "' has no hash tag: on a cluster the key"
                    + " and its token key must share a slot, so name it with one, for example '{" + shown(key) + "}'");
        }
        return tokenKey(key);
    }

    /**
     * Refuses a key that, with {@code suffix} more bytes (its token key's), is longer than {@code maxKeyBytes}: Redis
     * answers a bulk string over its {@code proto-max-bulk-len} with a protocol error and closes the connection,
     * failing the writes pipelined behind it too.
     */
    private void checkKeySize(String key, int suffix) {
        long limit = Math.min(maxKeyBytes, maxBulkBytes);
        if ((long) key.length() * 3 + suffix <= limit) {
            return;
        }
        long bytes = key.getBytes(StandardCharsets.UTF_8).length;
        if (bytes + suffix > limit) {
            throw new IllegalArgumentException("Redis key '" + shown(key) + "' is " + bytes + " bytes (UTF-8)"
                    + (suffix > 0 ? ", its token key " + (bytes + suffix) + "," : "")
                    + " over the limit of " + limit
                    + (limit < maxKeyBytes
                            ? " (the server's proto-max-bulk-len " + limit + ")"
                            : " (maxKeyBytes, at most the server's proto-max-bulk-len)")
                    + "; nothing was sent");
        }
    }

    /** Checks the keys of a user script: the first is fenced; on a cluster all share its hash slot. */
    public String checkScriptKeys(List<String> keys) {
        if (keys == null || keys.isEmpty()) {
            throw new IllegalArgumentException("a fenced script needs at least one key: KEYS[1] is the fenced key");
        }
        String tokenKey = check(keys.get(0));
        String tag = hashTag(keys.get(0));
        for (int i = 0; i < keys.size(); i++) {
            String key = keys.get(i);
            if (key == null) {
                throw new IllegalArgumentException("a fenced script's keys must not contain null: KEYS[" + (i + 1)
                        + "] of the script for Redis key '" + shown(keys.get(0)) + "' is null");
            }
            if (key.endsWith(TOKEN_KEY_SUFFIX)) {
                // a body given a token key could lower it, and the next stale write to its key would land
                throw new IllegalArgumentException("Redis key '" + shown(key) + "' of a fenced script ends with '"
                        + TOKEN_KEY_SUFFIX + "', the suffix of token keys: a token key is written by the fence only");
            }
            checkKeySize(key, 0);
            if (clusterKeys && !tag.equals(hashTag(key))) {
                throw new IllegalArgumentException("Redis key '" + shown(key) + "' does not share the hash tag {"
                        + shown(tag) + "} of the fenced key '" + shown(keys.get(0))
                        + "': on a cluster a script's keys share one slot");
            }
        }
        return tokenKey;
    }

    public void checkValue(String key, String value) {
        if (value == null) {
            throw new IllegalArgumentException("the value for Redis key '" + shown(key) + "' must not be null");
        }
        // a UTF-8 character takes at most 3 bytes per UTF-16 unit: encode only a value that could be too large
        if ((long) value.length() * 3 > Math.min(maxValueBytes, maxBulkBytes)) {
            long bytes = value.getBytes(StandardCharsets.UTF_8).length;
            checkBulk(key, "the value", bytes);
            checkSize(key, bytes);
        }
    }

    public void checkFields(String key, Map<String, String> fields) {
        if (fields == null || fields.isEmpty()) {
            throw new IllegalArgumentException("HSET of Redis key '" + shown(key) + "' needs at least one field");
        }
        long bound = 0;
        for (Map.Entry<String, String> field : fields.entrySet()) {
            if (field.getKey() == null || field.getValue() == null) {
                throw new IllegalArgumentException("HSET of Redis key '" + shown(key) + "': null field or value (field "
                        + shown(field.getKey()) + ")");
            }
            bound += 3L * (field.getKey().length() + field.getValue().length());
            if (overBulk(field.getKey())) {
                checkBulk(key, "field " + shown(field.getKey()) + " of the hash", field.getKey());
            }
            if (overBulk(field.getValue())) {
                checkBulk(key, "the value of field " + shown(field.getKey()), field.getValue());
            }
        }
        if (bound > maxValueBytes) {
            long bytes = 0;
            for (Map.Entry<String, String> field : fields.entrySet()) {
                bytes += field.getKey().getBytes(StandardCharsets.UTF_8).length
                        + field.getValue().getBytes(StandardCharsets.UTF_8).length;
            }
            checkSize(key, bytes);
        }
    }

    /** Checks a user script's arguments: none null, and all together within the limit values have. */
    public void checkScriptArguments(String key, List<String> args) {
        long bound = 0;
        for (int i = 0; i < args.size(); i++) { // List.of(...).contains(null) throws
            String arg = args.get(i);
            if (arg == null) {
                throw new IllegalArgumentException("a fenced script's arguments must not contain null: ARGV[" + (i + 1)
                        + "] of the script for Redis key '" + shown(key) + "' is null");
            }
            bound += 3L * arg.length();
            if (overBulk(arg)) {
                checkBulk(key, "ARGV[" + (i + 1) + "] of the fenced script", arg);
            }
        }
        if (bound > maxValueBytes) {
            long bytes = 0;
            for (String arg : args) {
                bytes += arg.getBytes(StandardCharsets.UTF_8).length;
            }
            if (bytes > maxValueBytes) {
                throw new IllegalArgumentException("the arguments of the fenced script for Redis key '" + shown(key)
                        + "' are " + bytes + " bytes (UTF-8) together, over the limit of " + maxValueBytes
                        + "; nothing was written");
            }
        }
    }

    public static void checkExact(String key, String what, long number) {
        if (number > EXACT_LIMIT || number < -EXACT_LIMIT) {
            throw new IllegalArgumentException(what + " " + number + " for Redis key '" + shown(key)
                    + "' is beyond +-2^53, where the guard's arithmetic (Lua's doubles) is exact");
        }
    }

    /**
     * Refuses one argument longer than the server's {@code proto-max-bulk-len}: Redis would answer it with a
     * protocol error and close the connection, failing the writes pipelined behind it too.
     */
    private void checkBulk(String key, String what, String text) {
        checkBulk(key, what, text.getBytes(StandardCharsets.UTF_8).length);
    }

    /** Whether {@code text} could be longer than the server's limit (a UTF-16 unit is at most 3 UTF-8 bytes). */
    private boolean overBulk(String text) {
        return (long) text.length() * 3 > maxBulkBytes;
    }

    private void checkBulk(String key, String what, long bytes) {
        if (bytes > maxBulkBytes) {
            throw new IllegalArgumentException(what + " for Redis key '" + shown(key) + "' is " + bytes
                    + " bytes (UTF-8), over the server's proto-max-bulk-len " + maxBulkBytes
                    + " (Redis would close the connection); nothing was written");
        }
    }

    private void checkSize(String key, long bytes) {
        if (bytes > maxValueBytes) {
            throw new IllegalArgumentException("the value for Redis key '" + shown(key) + "' is " + bytes
                    + " bytes (UTF-8), over the limit of " + maxValueBytes + "; nothing was written");
        }
    }
}
