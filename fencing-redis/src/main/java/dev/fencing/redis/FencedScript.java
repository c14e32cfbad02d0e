package dev.fencing.redis;

import dev.fencing.internal.Text;
import java.util.Locale;
import java.util.Objects;

/**
 * A Lua script body of the application's, run by {@link FencedRedis#tryEval} under the fence: the library's
 * part of the script checks the token of the fenced key (the body's {@code KEYS[1]}) and raises it, and only
 * then, in the same script, runs the body. The body sees its own {@code KEYS} and {@code ARGV}, exactly as
 * given to {@code tryEval}, and its return value comes back in {@link WriteOutcome.Applied#reply()}.
 * Immutable, thread-safe; build it once and reuse it (the script is cached by Redis under its SHA-1, and by
 * the writer, up to {@link FencedRedis.Builder#scriptCacheSize}), from fixed text: pass what changes in the
 * keys and arguments.
 *
 * <pre>{@code
 * FencedScript reserve = FencedScript.of("""
 *         local stock = tonumber(redis.call('HGET', KEYS[1], 'stock') or '0')
 *         if stock < tonumber(ARGV[1]) then return 0 end
 *         redis.call('HINCRBY', KEYS[1], 'stock', -tonumber(ARGV[1]))
 *         redis.call('RPUSH', KEYS[2], ARGV[2])
 *         return 1
 *         """);
 * WriteOutcome outcome = redis.tryEval(reserve, List.of("{sku-42}", "{sku-42}:orders"), List.of("3", "order-7"), token);
 * }</pre>
 *
 * <p>The token is raised before the body runs. Redis does not roll a script back: if the body fails half
 * way (a Lua error, a command refused, a {@code redis.error_reply} returned), its writes before the failure
 * stay, and so does the raised token, so that a writer with an older token still cannot overwrite them; the
 * {@link FencedRedisWriteException} says that the token was raised, from what to what, and the body's error.
 * Check before writing in the body.
 */
public final class FencedScript {
    private final String body;

    private FencedScript(String body) {
        this.body = body;
    }

    /**
     * A script whose body is {@code body}: Lua, as after {@code EVAL}, that may {@code return} a value.
     *
     * @throws IllegalArgumentException if the body is blank, or holds a UTF-16 surrogate without its pair, which
     *     UTF-8 cannot encode (the body would reach Redis with {@code ?} in its place, as keys and arguments
     *     holding one are refused)
     */
    public static FencedScript of(String body) {
        Objects.requireNonNull(body, "body");
        if (body.isBlank()) {
            throw new IllegalArgumentException("a fenced script's body must not be blank");
        }
        int unpaired = Text.firstUnpairedSurrogate(body);
        if (unpaired >= 0) {
            throw new IllegalArgumentException("a fenced script's body holds an unpaired UTF-16 surrogate \\u"
                    + Integer.toHexString(body.charAt(unpaired)).toUpperCase(Locale.ROOT) + " at index " + unpaired
                    + ", which UTF-8 cannot encode");
        }
        return new FencedScript(body);
    }

    /** The application's body, as given. */
    public String body() {
        return body;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof FencedScript script && script.body.equals(body);
    }

    @Override
    public int hashCode() {
        return body.hashCode();
    }

    @Override
    public String toString() {
        return "FencedScript[" + body.length() + " characters]";
    }
}
