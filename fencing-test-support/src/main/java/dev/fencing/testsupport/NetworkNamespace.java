package dev.fencing.testsupport;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A Linux network namespace joined to this host by a veth pair, for cutting one client off one server while
 * it still reaches the others. A process started with {@link #command} runs inside the namespace; the host
 * side of the veth holds addresses that servers on this host listen on, and {@link #cut} installs a blackhole
 * route to one of them inside the namespace, so that connections to that address alone fail, until {@link
 * #heal}.
 *
 * <pre>{@code
 * NetworkNamespace.removeAbandoned("fx");                       // leftovers of runs that were killed
 * String net = NetworkNamespace.freeSubnet();                   // e.g. "10.250.17"
 * try (NetworkNamespace client = NetworkNamespace.builder(NetworkNamespace.ownedName("fx", "c1"))
 *         .link(net + ".1", net + ".2", 30)                     // host side .1 (ZooKeeper listens there)
 *         .link(net + ".5", net + ".6", 30)                     // host side .5 (PostgreSQL, Kafka)
 *         .build()) {
 *     Process p = new ProcessBuilder(client.command("java", "-cp", cp, "Main")).start();
 *     client.cut(net + ".1");                                   // ZooKeeper unreachable, .5 still fine
 *     client.heal(net + ".1");
 * }
 * }</pre>
 *
 * <p>Only addresses this class puts on interfaces it creates are used: {@link #freeSubnet()} picks a {@code
 * 10.250.X.0/24} that no interface of the host uses. The namespace's default route points at the first
 * link's host address, so every host address is reachable from inside; nothing is forwarded beyond this
 * host (no NAT, forwarding untouched). So there is no DNS inside: a name lookup, even the reverse lookup of an
 * IP address that ZooKeeper's client makes on every connection, waits for the resolver's timeout (10 s
 * measured). Give a JVM inside {@code -Djdk.net.hosts.file=<a file with "127.0.0.1 localhost">}, which answers
 * every lookup from the file at once, and use IP addresses.
 *
 * <p>Needs root and iproute2 ({@code ip}): {@link #unavailableReason()} says, in one sentence, why they are
 * not available. Names carry the creating process's pid ({@link #ownedName}), so {@link #removeAbandoned}
 * can delete what a killed process left behind without touching another live process's namespaces. {@link
 * #close()} deletes the namespace and both veth ends; safe twice. Thread-safe.
 */
public final class NetworkNamespace implements AutoCloseable {
    private static final Pattern NAME = Pattern.compile("[a-z][a-z0-9-]{1,13}");
    private static final Pattern PREFIX = Pattern.compile("[a-z]{2,5}");
    private static final Pattern IPV4 = Pattern.compile("(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})");
    private static final String SUBNET_BASE = "10.250.";

    private final String name;
    private final List<Link> links;
    private final boolean cutsBothWays;
    private final Set<String> cuts = new HashSet<>();
    private boolean closed;

    private NetworkNamespace(String name, List<Link> links, boolean cutsBothWays) {
        this.name = name;
        this.links = List.copyOf(links);
        this.cutsBothWays = cutsBothWays;
    }

    /** One veth address pair: the host side's address and the namespace side's, in one subnet. */
    public record Link(String hostAddress, String namespaceAddress, int prefixLength) {}

    public static Builder builder(String name) {
        return new Builder(name);
    }

    /**
     * Why namespaces cannot be made here, as one sentence ("not running as root (uid 1000)", "the ip command
     * (iproute2) is not installed", ...), or empty when they can: it checks the uid, runs {@code ip -V}, and
     * creates and deletes a throwaway namespace.
     */
    public static Optional<String> unavailableReason() {
        if (!System.getProperty("os.name", "")
                .toLowerCase(java.util.Locale.ROOT)
                .contains("linux")) {
            return Optional.of("network namespaces exist only on Linux, this is " + System.getProperty("os.name"));
        }
        long uid = uid();
        if (uid != 0) {
            return Optional.of("network namespaces need root, and this process runs as uid " + uid);
        }
        try {
            run(List.of("ip", "-V"));
        } catch (RuntimeException e) {
            return Optional.of("the ip command (iproute2) is not available: " + e.getMessage());
        }
        String probe = ownedName("nsp", "probe");
        try {
            run(List.of("ip", "netns", "add", probe));
            run(List.of("ip", "netns", "del", probe));
            return Optional.empty();
        } catch (RuntimeException e) {
            return Optional.of("ip netns add fails here: " + e.getMessage());
        }
    }

    /**
     * A namespace name that {@link #removeAbandoned} recognizes: {@code prefix}, this process's pid in base 36,
     * a dash and {@code tag}.
     *
     * @param prefix 2 to 5 lower-case letters naming the program that owns it
     * @param tag what the namespace is for, lower-case letters and digits; the whole name must stay within 14
     *     characters (an interface name has at most 15, and the veth ends add one)
     */
    public static String ownedName(String prefix, String tag) {
        requirePrefix(prefix);
        String name = prefix + Long.toString(ProcessHandle.current().pid(), 36) + "-" + tag;
        if (!NAME.matcher(name).matches()) {
            throw new IllegalArgumentException("namespace name '" + name + "' (prefix '" + prefix + "', tag '" + tag
                    + "') must match " + NAME.pattern());
        }
        return name;
    }

    /**
     * Deletes the namespaces, and veth ends left on the host, named by {@link #ownedName} with {@code prefix}
     * whose owner process is no longer alive. Returns the names it deleted.
     */
    public static List<String> removeAbandoned(String prefix) {
        requirePrefix(prefix);
        List<String> removed = new ArrayList<>();
        Pattern owned = Pattern.compile(Pattern.quote(prefix) + "([0-9a-z]+)-[a-z0-9-]+");
        for (String line : run(List.of("ip", "netns", "list")).split("\n")) {
            String candidate = line.trim().split("\\s+")[0];
            if (abandoned(owned, candidate) && runUnlessGone(List.of("ip", "netns", "del", candidate))) {
                removed.add(candidate);
            }
        }
        for (String line : run(List.of("ip", "-o", "link", "show")).split("\n")) {
            // "12: fxab12-c1h@if11: <BROADCAST,..."
            String[] parts = line.split(":\\s+", 3);
            if (parts.length < 2) {
                continue;
            }
            String link = parts[1].split("@")[0];
            if (link.endsWith("h")
                    && abandoned(owned, link.substring(0, link.length() - 1))
                    && runUnlessGone(List.of("ip", "link", "del", link))) {
                removed.add(link);
            }
        }
        return removed;
    }

    /**
     * The first three octets of a {@code 10.250.X.0/24} that no interface of this host has an address in, for
     * example {@code "10.250.17"}; the search starts at a place derived from this process's pid, so that two
     * processes starting at once rarely pick the same one.
     *
     * @throws IllegalStateException when all 254 are in use
     */
    public static String freeSubnet() {
        Set<String> used = new HashSet<>();
        Matcher address = Pattern.compile("inet (" + Pattern.quote(SUBNET_BASE) + "\\d+)\\.")
                .matcher(run(List.of("ip", "-o", "-4", "addr", "show")));
        while (address.find()) {
            used.add(address.group(1));
        }
        int start = (int) (ProcessHandle.current().pid() % 254);
        for (int i = 0; i < 254; i++) {
            String subnet = SUBNET_BASE + (1 + (start + i) % 254);
            if (!used.contains(subnet)) {
                return subnet;
            }
        }
        throw new IllegalStateException("every 10.250.X.0/24 is in use on this host");
    }

    public String name() {
        return name;
    }

    /** The veth end on the host. */
    public String hostInterface() {
        return name + "h";
    }

    /** The veth end inside the namespace. */
    public String namespaceInterface() {
        return name + "n";
    }

    public List<Link> links() {
        return links;
    }

    /** {@code ip netns exec <name> command...}: the command as a process inside this namespace. */
    public List<String> command(List<String> command) {
        List<String> wrapped = new ArrayList<>(List.of("ip", "netns", "exec", name));
        wrapped.addAll(command);
        return wrapped;
    }

    public List<String> command(String... command) {
        return command(List.of(command));
    }

    /**
     * Cuts this namespace off {@code address}: a blackhole route to {@code address/32} inside it. New
     * connections fail at once and packets of established ones are dropped, so their peers see silence, as
     * in a real partition. Other addresses stay reachable. Cutting an address that is cut does nothing.
     *
     * <p>The route holds back only what the namespace sends: packets from {@code address} still arrive, so a
     * client inside keeps hearing what its server pushes on an established connection (a watch event, say)
     * while its own requests are lost. In a namespace built with {@link Builder#cutsBothWays()} they are dropped
     * too, as in a real partition.
     */
    public synchronized void cut(String address) {
        requireOpen();
        requireIpv4(address);
        if (cuts.add(address)) {
            run(List.of("ip", "-n", name, "route", "add", "blackhole", address + "/32"));
        }
    }

    /** Removes the blackhole route of {@link #cut}; healing an address that is not cut does nothing. */
    public synchronized void heal(String address) {
        requireIpv4(address);
        if (!closed && cuts.remove(address)) {
            run(List.of("ip", "-n", name, "route", "del", "blackhole", address + "/32"));
        }
    }

    /** Whether {@code address} is cut now. */
    public synchronized boolean isCut(String address) {
        return cuts.contains(address);
    }

    /** Deletes the namespace (which deletes both veth ends); processes still inside lose their network. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        cuts.clear();
        try {
            run(List.of("ip", "netns", "del", name));
        } catch (RuntimeException e) {
            // gone already, or half made; the veth check below still runs
        }
        if (linkExists(hostInterface())) {
            try {
                run(List.of("ip", "link", "del", hostInterface()));
            } catch (RuntimeException e) {
                // the kernel removes a deleted namespace's veth pair later, in its own cleanup: the link seen
                // above may be gone by now ("Cannot find device" failed a CI run)
                if (linkExists(hostInterface())) {
                    throw e;
                }
            }
        }
    }

    @Override
    public String toString() {
        return "network namespace " + name + " " + links;
    }

    private void create() {
        run(List.of("ip", "netns", "add", name));
        try {
            run(List.of(
                    "ip",
                    "link",
                    "add",
                    hostInterface(),
                    "type",
                    "veth",
                    "peer",
                    "name",
                    namespaceInterface(),
                    "netns",
                    name));
            for (Link link : links) {
                run(List.of(
                        "ip", "addr", "add", link.hostAddress() + "/" + link.prefixLength(), "dev", hostInterface()));
                run(List.of(
                        "ip",
                        "-n",
                        name,
                        "addr",
                        "add",
                        link.namespaceAddress() + "/" + link.prefixLength(),
                        "dev",
                        namespaceInterface()));
            }
            run(List.of("ip", "link", "set", hostInterface(), "up"));
            run(List.of("ip", "-n", name, "link", "set", namespaceInterface(), "up"));
            run(List.of("ip", "-n", name, "link", "set", "lo", "up"));
            if (cutsBothWays) {
                // strict reverse path filtering: a packet whose source the namespace routes to a blackhole is
                // dropped on arrival (/proc/sys/net is the namespace's own under ip netns exec)
                run(command("sh", "-c", "echo 1 > /proc/sys/net/ipv4/conf/all/rp_filter"));
            }
            run(List.of(
                    "ip",
                    "-n",
                    name,
                    "route",
                    "add",
                    "default",
                    "via",
                    links.get(0).hostAddress()));
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    private void requireOpen() {
        if (closed) {
            throw new IllegalStateException(this + " is closed");
        }
    }

    private static boolean abandoned(Pattern owned, String name) {
        Matcher matcher = owned.matcher(name);
        if (!matcher.matches()) {
            return false;
        }
        long pid;
        try {
            pid = Long.parseLong(matcher.group(1), 36);
        } catch (NumberFormatException e) {
            return false;
        }
        return ProcessHandle.of(pid).map(p -> !p.isAlive()).orElse(true);
    }

    private static boolean linkExists(String link) {
        try {
            run(List.of("ip", "link", "show", link));
            return true;
        } catch (RuntimeException e) {
            return false;
        }
    }

    private static void requirePrefix(String prefix) {
        if (prefix == null || !PREFIX.matcher(prefix).matches()) {
            throw new IllegalArgumentException(
                    "namespace prefix must be 2 to 5 lower-case letters, got '" + prefix + "'");
        }
    }

    private static void requireIpv4(String address) {
        Matcher matcher = IPV4.matcher(address == null ? "" : address);
        if (!matcher.matches()) {
            throw new IllegalArgumentException("not an IPv4 address: '" + address + "'");
        }
        for (int i = 1; i <= 4; i++) {
            if (Integer.parseInt(matcher.group(i)) > 255) {
                throw new IllegalArgumentException("not an IPv4 address: '" + address + "'");
            }
        }
    }

    private static long uid() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("Uid:")) {
                    return Long.parseLong(line.substring(4).trim().split("\\s+")[0]);
                }
            }
        } catch (IOException | NumberFormatException e) {
            // fall through: unknown, treated as not root
        }
        return -1;
    }

    /**
     * Runs a deletion; false if what it deletes was already gone. The host end of a veth pair goes away by
     * itself, shortly after its namespace is deleted (by this process or another one cleaning up at the same
     * time), so it can vanish between the listing and its deletion.
     */
    private static boolean runUnlessGone(List<String> command) {
        try {
            run(command);
            return true;
        } catch (IllegalStateException e) {
            if (alreadyGone(String.valueOf(e.getMessage()))) {
                return false;
            }
            throw e;
        }
    }
    /**
     * Whether {@code ip}'s error says that what it was to delete does not exist: "Cannot find device" when
     * the name no longer resolves, "No such device" (ENODEV from RTNETLINK) when the link went between the
     * name's lookup and the deletion, "No such file or directory" for a namespace.
     */
    static boolean alreadyGone(String ipError) {
        return ipError.contains("Cannot find device")
                || ipError.contains("No such device")
                || ipError.contains("No such file or directory");
    }

    /** Runs a command, returns its standard output; fails with the command and its output when it fails. */
    private static String run(List<String> command) {
        try {
            Process process =
                    new ProcessBuilder(command).redirectErrorStream(true).start();
            process.getOutputStream().close();
            String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new IllegalStateException("'" + String.join(" ", command) + "' did not finish within 30 s");
            }
            if (process.exitValue() != 0) {
                throw new IllegalStateException("'" + String.join(" ", command) + "' failed (exit "
                        + process.exitValue() + "): " + output.trim());
            }
            return output;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run '" + String.join(" ", command) + "': " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while running '" + String.join(" ", command) + "'", e);
        }
    }

    /** The namespace's name and veth address pairs; {@link #build()} creates it. */
    public static final class Builder {
        private final String name;
        private final List<Link> links = new ArrayList<>();
        private boolean cutsBothWays;

        private Builder(String name) {
            if (name == null || !NAME.matcher(name).matches()) {
                throw new IllegalArgumentException("namespace name must match " + NAME.pattern()
                        + " (veth ends add one character), got '" + name + "'");
            }
            this.name = name;
        }

        /**
         * One address pair on the veth: {@code hostAddress/prefixLength} on the host end, {@code
         * namespaceAddress/prefixLength} inside. The first pair's host address is the namespace's default
         * route.
         */
        public Builder link(String hostAddress, String namespaceAddress, int prefixLength) {
            requireIpv4(hostAddress);
            requireIpv4(namespaceAddress);
            if (hostAddress.equals(namespaceAddress)) {
                throw new IllegalArgumentException("host and namespace address are both " + hostAddress);
            }
            if (prefixLength < 8 || prefixLength > 30) {
                throw new IllegalArgumentException("prefix length must be 8..30, got " + prefixLength);
            }
            links.add(new Link(hostAddress, namespaceAddress, prefixLength));
            return this;
        }

        /**
         * Makes {@link #cut} drop what comes from a cut address as well as what goes to it, so that nothing of an
         * established connection crosses in either direction (strict reverse path filtering inside the namespace).
         * Without it a cut holds back only what the namespace sends.
         */
        public Builder cutsBothWays() {
            this.cutsBothWays = true;
            return this;
        }

        /**
         * Creates the namespace, the veth pair, the addresses and the default route; on failure removes what
         * it made.
         *
         * @throws IllegalStateException naming the {@code ip} command that failed and its output
         */
        public NetworkNamespace build() {
            if (links.isEmpty()) {
                throw new IllegalStateException("no link: call link(...) at least once");
            }
            NetworkNamespace namespace = new NetworkNamespace(name, links, cutsBothWays);
            namespace.create();
            return namespace;
        }
    }
}
