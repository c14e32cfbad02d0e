package dev.fencing.spring.internal;

/** Checks of the lock paths and prefixes an application configures. Pure functions. */
public final class LockPaths {
    private LockPaths() {}

    /**
     * Refuses {@code path} with whitespace at its start or end. ZooKeeper and etcd take it as given, so {@code
     * "/locks/jobs "} (a properties file keeps a value's trailing blanks) is another tree than {@code "/locks/jobs"},
     * and instances configured with each would hold the same lock at once.
     *
     * @param what what the path is, for the message ({@code "path prefix"}, {@code "fencing.election.path"})
     * @throws IllegalArgumentException naming {@code what} and the path
     */
    public static void requireNoOuterWhitespace(String what, String path) {
        if (!path.strip().equals(path)) {
            throw new IllegalArgumentException(what + " '" + path + "' has whitespace at its start or end, which the"
                    + " lock service would keep: another tree than '" + path.strip() + "', whose locks instances"
                    + " configured without the whitespace would hold at the same time. Remove the whitespace");
        }
    }
}
