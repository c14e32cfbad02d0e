package dev.fencing.testsupport;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Finds the {@code etcd} server binary that {@link EmbeddedEtcdCluster} runs, fetching it when this machine has
 * none. No Maven artifact ships an etcd server, so the search goes, in this order:
 *
 * <ol>
 *   <li>the system property {@value #BINARY_PROPERTY}, then the environment variable {@value #BINARY_ENV}: the
 *       path of an {@code etcd} binary. When one is set it is the only candidate: a path that is not an
 *       executable file fails, naming the setting, instead of falling through to another binary;
 *   <li>an {@code etcd} on the {@code PATH} (for example from {@code apt-get install etcd-server}, {@code brew
 *       install etcd}, or a release from github.com/etcd-io/etcd);
 *   <li>on Linux x86_64 only: Debian's {@code etcd-server} package ({@value #PACKAGE_URI}), downloaded once, its
 *       SHA-256 checked, unpacked in Java (no {@code dpkg}, no root) into {@code
 *       $XDG_CACHE_HOME/fencing-toolkit/} (default {@code ~/.cache/fencing-toolkit/}) and reused from there by
 *       later runs.
 * </ol>
 *
 * When none of these gives a binary, {@link #locate()} throws an {@link IllegalStateException} that names what
 * it tried (the settings, the {@code PATH}, the URL, a checksum that did not match) and what to install; tests
 * that need etcd fail with it rather than being skipped.
 *
 * <pre>{@code
 * Path etcd = EtcdBinary.locate(); // found once per JVM
 * }</pre>
 *
 * Thread-safe. Several JVMs may fill the cache at once: each unpacks into a directory of its own and moves the
 * checked binary into place atomically.
 */
public final class EtcdBinary {
    private static final Logger LOG = LoggerFactory.getLogger(EtcdBinary.class);

    /** System property naming an etcd binary; wins over {@value #BINARY_ENV}. */
    public static final String BINARY_PROPERTY = "fencing.etcd.binary";
    /** Environment variable naming an etcd binary, for example {@code /usr/local/bin/etcd}. */
    public static final String BINARY_ENV = "FENCING_ETCD_BINARY";
    /** Where the binary comes from when this machine has none: Debian's {@code etcd-server} 3.4.23 for amd64. */
    public static final String PACKAGE_URI =
            "http://deb.debian.org/debian/pool/main/e/etcd/etcd-server_3.4.23-4+b4_amd64.deb";

    static final Download DEBIAN_ETCD_SERVER = new Download(
            URI.create(PACKAGE_URI),
            "3a9445d4560ad6de1c375756b2a17d97713df44cbd20a658c871fe108af7ef5d",
            "usr/bin/etcd",
            "a45de16600eafc57939b84013b0522c4670435471eb4073dd963d01e0eb5a217",
            21_529_688,
            "etcd-server_3.4.23-4+b4_amd64");

    private static final int CONNECT_TIMEOUT_MILLIS = 15_000;
    private static final int READ_TIMEOUT_MILLIS = 60_000;

    private static Path located;

    private final String property;
    private final String variable;
    private final String pathVariable;
    private final Path cacheRoot;
    private final String platform;
    private final Download download;

    /** A package file to fetch, its checksum, the binary inside it, that binary's checksum and size. */
    record Download(
            URI uri, String packageSha256, String installedPath, String binarySha256, long binarySize, String name) {}

    EtcdBinary(
            String property, String variable, String pathVariable, Path cacheRoot, String platform, Download download) {
        this.property = property;
        this.variable = variable;
        this.pathVariable = pathVariable;
        this.cacheRoot = cacheRoot;
        this.platform = Objects.requireNonNull(platform, "platform");
        this.download = Objects.requireNonNull(download, "download");
    }

    /**
     * The etcd binary to run, found (or fetched) on the first call and remembered for the JVM.
     *
     * @throws IllegalStateException if there is none and none can be fetched; the message says what was tried
     */
    public static synchronized Path locate() {
        if (located == null) {
            Map<String, String> env = System.getenv();
            located = new EtcdBinary(
                            System.getProperty(BINARY_PROPERTY),
                            env.get(BINARY_ENV),
                            env.get("PATH"),
                            defaultCacheRoot(env),
                            System.getProperty("os.name", "") + " " + System.getProperty("os.arch", ""),
                            DEBIAN_ETCD_SERVER)
                    .find();
        }
        return located;
    }

    Path find() {
        if (isSet(property)) {
            return explicit("system property " + BINARY_PROPERTY, property);
        }
        if (isSet(variable)) {
            return explicit("environment variable " + BINARY_ENV, variable);
        }
        Path onPath = onPath();
        if (onPath != null) {
            LOG.info("etcd binary: {} (from the PATH)", onPath);
            return onPath;
        }
        String notFound = "no etcd binary: neither " + BINARY_PROPERTY + " nor " + BINARY_ENV
                + " is set and the PATH has no etcd (PATH=" + pathVariable + ")";
        if (!fitsPackage(platform)) {
            throw new IllegalStateException(notFound + "; the automatic download (" + download.uri()
                    + ") is for Linux x86_64 and this is " + platform + ". " + installHint());
        }
        if (cacheRoot == null) {
            throw new IllegalStateException(notFound + ", and there is no cache directory to fetch " + download.uri()
                    + " into (neither XDG_CACHE_HOME nor user.home is set). " + installHint());
        }
        try {
            return cachedOrFetched();
        } catch (IOException | RuntimeException e) {
            throw new IllegalStateException(
                    notFound + ", and fetching it failed: " + e.getMessage() + ". " + installHint(), e);
        }
    }

    private Path explicit(String setting, String value) {
        Path path = Path.of(value.trim());
        if (!Files.isRegularFile(path) || !Files.isExecutable(path)) {
            throw new IllegalStateException(setting + " names '" + value + "', which is not an executable file");
        }
        LOG.info("etcd binary: {} (from the {})", path, setting);
        return path;
    }

    private Path onPath() {
        if (!isSet(pathVariable)) {
            return null;
        }
        for (String directory : pathVariable.split(java.io.File.pathSeparator)) {
            if (directory.isEmpty()) {
                continue;
            }
            Path candidate = Path.of(directory, "etcd");
            if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
                return candidate;
            }
        }
        return null;
    }

    private Path cachedOrFetched() throws IOException {
        Path directory = cacheRoot.resolve("fencing-toolkit").resolve(download.name());
        Path binary = directory.resolve("etcd");
        if (Files.isRegularFile(binary)) {
            // Only a binary whose SHA-256 matched is ever moved to this name, so its size is check enough here
            // (hashing 21 MB costs a cold JVM about a second, on every test JVM); a different size means
            // someone else wrote the file.
            long size = Files.size(binary);
            if (size == download.binarySize() && Files.isExecutable(binary)) {
                LOG.info("etcd binary: {} (cached from {})", binary, download.uri());
                return binary;
            }
            LOG.warn(
                    "cached etcd binary {} has {} bytes, expected {}: fetching {} again",
                    binary,
                    size,
                    download.binarySize(),
                    download.uri());
        }
        Files.createDirectories(directory);
        long started = System.nanoTime();
        Path work = Files.createTempDirectory(directory, ".fetch-");
        try {
            Path deb = work.resolve(download.name() + ".deb");
            String packageSha256 = fetch(deb);
            if (!packageSha256.equals(download.packageSha256())) {
                throw new IOException("checksum mismatch: " + download.uri() + " has SHA-256 " + packageSha256
                        + ", expected " + download.packageSha256() + " (not used)");
            }
            Path unpacked = work.resolve("etcd");
            DebianPackage.extract(deb, download.installedPath(), unpacked);
            String binarySha256 = sha256(unpacked);
            if (!binarySha256.equals(download.binarySha256()) || Files.size(unpacked) != download.binarySize()) {
                throw new IOException("checksum mismatch: " + download.installedPath() + " in " + download.uri()
                        + " has SHA-256 " + binarySha256 + " (" + Files.size(unpacked) + " bytes), expected "
                        + download.binarySha256() + " (" + download.binarySize() + " bytes)");
            }
            if (!unpacked.toFile().setExecutable(true, false)) {
                throw new IOException("cannot make " + unpacked + " executable");
            }
            moveIntoPlace(unpacked, binary);
        } finally {
            deleteTree(work);
        }
        LOG.info(
                "etcd binary: {} (downloaded from {} and unpacked in {} ms)",
                binary,
                download.uri(),
                (System.nanoTime() - started) / 1_000_000);
        return binary;
    }

    /** Downloads the package to {@code target}; returns its SHA-256. */
    private String fetch(Path target) throws IOException {
        HttpURLConnection connection;
        try {
            connection = (HttpURLConnection) download.uri().toURL().openConnection();
        } catch (IOException | IllegalArgumentException e) {
            throw new IOException("cannot open " + download.uri() + ": " + e, e);
        }
        connection.setConnectTimeout(CONNECT_TIMEOUT_MILLIS);
        connection.setReadTimeout(READ_TIMEOUT_MILLIS);
        connection.setInstanceFollowRedirects(true);
        try {
            int status;
            try {
                status = connection.getResponseCode();
            } catch (IOException e) {
                throw new IOException("GET " + download.uri() + " failed: " + e, e);
            }
            if (status != HttpURLConnection.HTTP_OK) {
                throw new IOException("GET " + download.uri() + " answered HTTP " + status);
            }
            MessageDigest digest = sha256Digest();
            try (InputStream in = new DigestInputStream(connection.getInputStream(), digest);
                    OutputStream out = Files.newOutputStream(target)) {
                in.transferTo(out);
            } catch (IOException e) {
                throw new IOException("GET " + download.uri() + " broke off: " + e, e);
            }
            return HexFormat.of().formatHex(digest.digest());
        } finally {
            connection.disconnect();
        }
    }

    private static void moveIntoPlace(Path unpacked, Path binary) throws IOException {
        try {
            // rename(2): a JVM that checks the cache meanwhile sees either no binary or a whole one
            Files.move(unpacked, binary, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(unpacked, binary, StandardCopyOption.REPLACE_EXISTING);
        }
    }

    static String sha256(Path file) throws IOException {
        MessageDigest digest = sha256Digest();
        try (InputStream in = new DigestInputStream(Files.newInputStream(file), digest)) {
            in.transferTo(OutputStream.nullOutputStream());
        }
        return HexFormat.of().formatHex(digest.digest());
    }

    private static MessageDigest sha256Digest() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }

    static boolean fitsPackage(String platform) {
        String p = platform.toLowerCase(Locale.ROOT);
        return p.startsWith("linux") && (p.endsWith(" amd64") || p.endsWith(" x86_64"));
    }

    private static String installHint() {
        return "Install etcd (Debian/Ubuntu: apt-get install etcd-server; macOS: brew install etcd; otherwise a"
                + " release from https://github.com/etcd-io/etcd/releases) and put it on the PATH, or set "
                + BINARY_ENV + " (or -D" + BINARY_PROPERTY + ") to its path, or point the tests at a running"
                + " cluster with " + EtcdServers.ENDPOINTS_ENV;
    }

    static Path defaultCacheRoot(Map<String, String> env) {
        String xdg = env.get("XDG_CACHE_HOME");
        if (isSet(xdg)) {
            return Path.of(xdg);
        }
        String home = System.getProperty("user.home");
        return isSet(home) ? Path.of(home, ".cache") : null;
    }

    private static boolean isSet(String value) {
        return value != null && !value.isBlank();
    }

    private static void deleteTree(Path root) {
        try (Stream<Path> paths = Files.walk(root)) {
            paths.sorted(Comparator.reverseOrder())
                    .forEach(path -> path.toFile().delete());
        } catch (IOException | UncheckedIOException e) {
            LOG.debug("could not delete {}: {}", root, e.toString());
        }
    }
}
