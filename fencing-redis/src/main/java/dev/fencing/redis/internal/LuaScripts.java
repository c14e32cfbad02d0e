package dev.fencing.redis.internal;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * The Lua scripts of the fenced writes. Each one checks the token and writes in the same script, which Redis
 * runs without interleaving any other command; that atomicity is the whole point, so nothing here reads in
 * one round trip and writes in another.
 *
 * <p>Every script gets the fenced key and its token key as {@code KEYS}, and the offered token and the
 * policy ({@code S} strict, {@code M} monotonic; {@code s} and {@code m} when an earlier sending of the same
 * call had no reply, see {@link ScriptCall}) as its first two {@code ARGV}. It replies with one string of
 * decimal numbers, read by {@link FenceReply} without a table to decode: {@code "1 stored"} applied ({@code "1
 * stored reply"} where the write has a reply), {@code "0 stored"} rejected, {@code "2 stored value"} guard
 * false, {@code "3 stored"} a call sent again that is not run, its outcome unknown. The user's script replies
 * with a table instead, {@code {1, stored, reply}} and so on, since its body's reply can be anything. A strict call sent again runs only when the
 * stored token is below the offered one: its earlier sending has not applied, and if it arrives later it is
 * refused by this run's token. A monotonic call sent again never runs: its earlier sending may have applied
 * with the token unchanged, or may still arrive and apply, so a run now could apply it twice;
 * tokens travel as decimal text because Lua numbers are doubles, exact only up to 2^53, and tokens (a
 * ZooKeeper zxid, for one) use all 63 bits. Malformed state is an error reply starting with {@code FENCING}
 * that names the key, sent before anything is written; the one error reply after a write is a user script's
 * body failing, {@link #BODY_FAILED}.
 */
public final class LuaScripts {
    private LuaScripts() {}

    /**
     * A script's text and the SHA-1 under which Redis caches it, each also as the bulk string that EVAL and
     * EVALSHA send, encoded once.
     */
    public static final class Script {
        private final String text;
        private final String sha;
        private final byte[] encodedText;
        private final byte[] encodedSha;

        private Script(String text, String sha) {
            this.text = text;
            this.sha = sha;
            this.encodedText = bulk(text.getBytes(StandardCharsets.UTF_8));
            this.encodedSha = bulk(sha.getBytes(StandardCharsets.US_ASCII));
        }

        static Script of(String text) {
            try {
                byte[] digest = MessageDigest.getInstance("SHA-1").digest(text.getBytes(StandardCharsets.UTF_8));
                return new Script(text, HexFormat.of().formatHex(digest));
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException("SHA-1 is missing from this JVM", e);
            }
        }

        public String text() {
            return text;
        }

        public String sha() {
            return sha;
        }

        /** Shared: never written to. */
        byte[] encodedText() {
            return encodedText;
        }

        /** Shared: never written to. */
        byte[] encodedSha() {
            return encodedSha;
        }

        private static byte[] bulk(byte[] value) {
            byte[] header = ("$" + value.length + "\r\n").getBytes(StandardCharsets.US_ASCII);
            byte[] bulk = Arrays.copyOf(header, header.length + value.length + 2);
            System.arraycopy(value, 0, bulk, header.length, value.length);
            bulk[bulk.length - 2] = '\r';
            bulk[bulk.length - 1] = '\n';
            return bulk;
        }

        @Override
        public String toString() {
            return "Script[sha=" + sha + "]";
        }
    }

    /**
     * The check, shared by every script. Compares decimal strings without leading zeros: the longer is the
     * larger, and at equal length the string order is the numeric order. A token key that holds anything
     * but such a string, or one beyond a Java long (set behind the library's back: no offered token can beat
     * it, and no reply could carry it), fails closed. Errors show a key as {@link FencedKeys#shown} does.
     */
    static final String FENCE = """
            local function fencing_shown(k)
              if #k <= 200 then return k end
              local cut = 64
              while cut > 0 and string.byte(k, cut + 1) >= 128 and string.byte(k, cut + 1) < 192 do
                cut = cut - 1
              end
              return string.sub(k, 1, cut) .. '... (' .. #k .. ' bytes, sha1 '
                .. string.sub(redis.sha1hex(k), 1, 12) .. ')'
            end
            local function fencing_stored(tk, read)
              local stored = read
              if stored == nil then
                stored = redis.pcall('GET', tk)
                if type(stored) == 'table' and stored.err then
                  return nil, 'FENCING token key ' .. fencing_shown(tk) .. ' holds no string (' .. stored.err .. '); nothing was written'
                end
              elseif not stored and redis.call('EXISTS', tk) == 1 then
                return nil, 'FENCING token key ' .. fencing_shown(tk) .. ' holds no string; nothing was written'
              end
              if not stored then return '0' end
              if #stored > 19 or not string.match(stored, '^[1-9]%d*$')
                  or (#stored == 19 and stored > '9223372036854775807') then
                return nil, 'FENCING token key ' .. fencing_shown(tk) .. ' holds "' .. string.sub(stored, 1, 40)
                  .. '", not a fence token (a whole number from 1 to 9223372036854775807); nothing was written'
              end
              return stored
            end
            local function fencing_refusal(stored, offered, policy)
              local greater = #stored < #offered or (#stored == #offered and stored < offered)
              if policy == 'S' then
                if greater then return nil end
                return 0
              elseif policy == 'M' then
                if greater or stored == offered then return nil end
                return 0
              elseif policy == 's' and greater then
                return nil
              end
              return 3
            end
            local function fencing_type(key, expected)
              local t = redis.call('TYPE', key).ok
              if t ~= 'none' and t ~= expected then
                return 'FENCING WRONGTYPE key ' .. fencing_shown(key) .. ' holds a ' .. t .. ', not a ' .. expected
                  .. '; nothing was written'
              end
              return nil
            end
            local function fencing_failed(reply, key, expected)
              if type(reply) == 'table' and reply.err then
                return fencing_type(key, expected) or reply.err
              end
              return nil
            end
            """;

    /**
     * KEYS: value, token key. ARGV: token, policy, value, time to live in ms or "". Without a time to live the
     * value and the token are written by one MSET (a command fewer for Redis to run).
     */
    public static final Script SET = Script.of(FENCE + """
            local err = fencing_type(KEYS[1], 'string')
            if err then return redis.error_reply(err) end
            local stored
            stored, err = fencing_stored(KEYS[2])
            if err then return redis.error_reply(err) end
            local refusal = fencing_refusal(stored, ARGV[1], ARGV[2])
            if refusal then return refusal .. ' ' .. stored end
            if ARGV[4] == '' then
              redis.call('MSET', KEYS[1], ARGV[3], KEYS[2], ARGV[1])
            else
              redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4])
              redis.call('SET', KEYS[2], ARGV[1])
            end
            return '1 ' .. stored
            """);

    /**
     * KEYS: hash, token key. ARGV: token, policy, field, value, field, value... The hash's type is not read
     * beforehand: HSET itself refuses a key of another type, before it writes, and only then is the type read
     * for the message (a stale token on such a key is therefore rejected, not an error).
     */
    public static final Script HSET = Script.of(FENCE + """
            local stored, err = fencing_stored(KEYS[2])
            if err then return redis.error_reply(err) end
            local refusal = fencing_refusal(stored, ARGV[1], ARGV[2])
            if refusal then return refusal .. ' ' .. stored end
            local i = 3
            while i <= #ARGV do
              local last = math.min(i + 199, #ARGV)
              err = fencing_failed(redis.pcall('HSET', KEYS[1], unpack(ARGV, i, last)), KEYS[1], 'hash')
              if err then return redis.error_reply(err) end
              i = last + 1
            end
            redis.call('SET', KEYS[2], ARGV[1])
            return '1 ' .. stored
            """);

    /** KEYS: key, token key. ARGV: token, policy. */
    public static final Script DELETE = Script.of(FENCE + """
            local stored, err = fencing_stored(KEYS[2])
            if err then return redis.error_reply(err) end
            local refusal = fencing_refusal(stored, ARGV[1], ARGV[2])
            if refusal then return refusal .. ' ' .. stored end
            local deleted = redis.call('DEL', KEYS[1])
            redis.call('SET', KEYS[2], ARGV[1])
            return '1 ' .. stored .. ' ' .. deleted
            """);

    /**
     * KEYS: counter, token key. ARGV: token, policy, delta, minimum. The token and the counter are read in one
     * MGET, which reads a key of another type as nil: only then are the token key's existence and the counter's
     * type read (a token key that exists without a string fails closed; a stale token on a counter of another
     * type is rejected, not an error, as in {@link #HSET}).
     */
    public static final Script INCREMENT = Script.of(FENCE + """
            local read = redis.call('MGET', KEYS[2], KEYS[1])
            local stored, err = fencing_stored(KEYS[2], read[1])
            if err then return redis.error_reply(err) end
            local refusal = fencing_refusal(stored, ARGV[1], ARGV[2])
            if refusal then return refusal .. ' ' .. stored end
            local raw = read[2]
            if not raw then
              err = fencing_type(KEYS[1], 'string')
              if err then return redis.error_reply(err) end
            end
            local current = 0
            if raw then
              if not (raw == '0' or string.match(raw, '^-?[1-9]%d*$')) or #raw > 17 then
                return redis.error_reply('FENCING counter key ' .. fencing_shown(KEYS[1]) .. ' holds "' .. string.sub(raw, 1, 40)
                  .. '", not an integer within +-2^53; nothing was written')
              end
              current = tonumber(raw)
              if math.abs(current) >= 9007199254740992 then
                return redis.error_reply('FENCING counter key ' .. fencing_shown(KEYS[1]) .. ' holds ' .. raw
                  .. ', beyond +-2^53 where the guard is exact; nothing was written')
              end
            end
            local result = current + tonumber(ARGV[3])
            if math.abs(result) >= 9007199254740992 then
              return redis.error_reply('FENCING counter key ' .. fencing_shown(KEYS[1]) .. ' would reach ' .. string.format('%.0f', result)
                .. ', beyond +-2^53 where the guard is exact; nothing was written')
            end
            if result < tonumber(ARGV[4]) then return '2 ' .. stored .. ' ' .. (raw or '0') end
            local value = redis.call('INCRBY', KEYS[1], ARGV[3])
            redis.call('SET', KEYS[2], ARGV[1])
            return '1 ' .. stored .. ' ' .. string.format('%.0f', value)
            """);

    /**
     * How the user's script replies when its body failed (raised an error, or returned one) after the fence had
     * raised the token: this, the token stored before, a space, and the body's error.
     */
    static final String BODY_FAILED = "FENCING BODY ";

    /**
     * The application's body, under the fence of its first key. The library appends the token key to
     * {@code KEYS} and the token and policy to {@code ARGV}, and takes them off again before the body runs,
     * so the body sees exactly the keys and arguments it was given. The token is raised before the body
     * runs: Redis keeps a failed script's earlier writes, and they must not be open to an older token. The body
     * runs under {@code pcall}, so that its error is told apart from the fence's own (which come before anything
     * is written): it comes back as {@link #BODY_FAILED} with the token stored before.
     */
    public static Script userScript(String body) {
        return Script.of(USER_HEAD + body + USER_TAIL);
    }

    private static final String USER_HEAD = FENCE + """
            local fencing_policy = table.remove(ARGV)
            local fencing_offered = table.remove(ARGV)
            local fencing_tk = table.remove(KEYS)
            local fencing_prior, fencing_err = fencing_stored(fencing_tk)
            if fencing_err then return redis.error_reply(fencing_err) end
            local fencing_refused = fencing_refusal(fencing_prior, fencing_offered, fencing_policy)
            if fencing_refused then return {fencing_refused, fencing_prior} end
            redis.call('SET', fencing_tk, fencing_offered)
            local fencing_ran, fencing_reply = pcall(function()
            """;

    private static final String USER_TAIL = """

            end)
            if not fencing_ran or (type(fencing_reply) == 'table' and fencing_reply.err) then
              local fencing_cause = fencing_reply
              if type(fencing_cause) == 'table' then fencing_cause = fencing_cause.err end
              return redis.error_reply('BODY_FAILED' .. fencing_prior .. ' ' .. tostring(fencing_cause))
            end
            return {1, fencing_prior, fencing_reply}
            """.replace("BODY_FAILED", BODY_FAILED);
}
