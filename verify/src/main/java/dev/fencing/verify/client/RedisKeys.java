package dev.fencing.verify.client;

/**
 * The Redis keys of one run's resource, shared by the writers and the coordinator that reads them at the end.
 * Both carry the hash tag {@code {<prefix>-<resource>}}, so that the value, its log and the value's token key
 * ({@code <value key>:fencing-token}) share a hash slot, as a fenced script on Redis Cluster needs.
 */
public final class RedisKeys {
    private RedisKeys() {}

    /** The string holding the id of the operation that wrote the resource last. */
    public static String value(String prefix, String resource) {
        return "{" + prefix + "-" + resource + "}:value";
    }

    /** The list of the ids of the script writes, in the order Redis applied them. */
    public static String log(String prefix, String resource) {
        return "{" + prefix + "-" + resource + "}:log";
    }
}
