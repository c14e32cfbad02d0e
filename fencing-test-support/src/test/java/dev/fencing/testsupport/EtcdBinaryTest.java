package dev.fencing.testsupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.commons.compress.archivers.ar.ArArchiveEntry;
import org.apache.commons.compress.archivers.ar.ArArchiveOutputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tukaani.xz.LZMA2Options;
import org.tukaani.xz.XZOutputStream;

/** Finding and fetching the etcd binary, against a package served from this JVM (no network, no real etcd). */
class EtcdBinaryTest {
    private static final String LINUX = "Linux amd64";
    private static final byte[] FAKE_ETCD = "#!/bin/sh\necho fake etcd\n".getBytes(StandardCharsets.UTF_8);

    @TempDir
    Path temp;

    private HttpServer http;
    private final AtomicInteger requests = new AtomicInteger();
    private volatile byte[] served;

    @BeforeEach
    void serve() throws IOException {
        http = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        http.createContext("/pool/etcd.deb", exchange -> {
            requests.incrementAndGet();
            byte[] body = served;
            if (body == null) {
                exchange.sendResponseHeaders(404, -1);
            } else {
                exchange.sendResponseHeaders(200, body.length);
                try (OutputStream out = exchange.getResponseBody()) {
                    out.write(body);
                }
            }
            exchange.close();
        });
        http.start();
    }

    @AfterEach
    void stopServing() {
        http.stop(0);
    }

    @Test
    void fetchesChecksAndUnpacksThePackageOnceThenReusesTheCache() throws IOException {
        served = deb("./usr/bin/etcd", FAKE_ETCD);
        Path cache = temp.resolve("cache");

        Path first = binary(null, null, cache, sha256(served)).find();
        Path second = binary(null, null, cache, sha256(served)).find();

        assertThat(first).isEqualTo(second).startsWith(cache);
        assertThat(Files.readAllBytes(first)).isEqualTo(FAKE_ETCD);
        assertThat(Files.isExecutable(first)).isTrue();
        assertThat(requests).hasValue(1);
        // nothing left of the download but the binary
        try (var files = Files.list(first.getParent())) {
            assertThat(files).containsExactly(first);
        }
    }

    @Test
    void aTruncatedCachedBinaryIsFetchedAgain() throws IOException {
        served = deb("./usr/bin/etcd", FAKE_ETCD);
        Path cache = temp.resolve("cache");
        Path binary = binary(null, null, cache, sha256(served)).find();
        Files.writeString(binary, "truncated");

        Path again = binary(null, null, cache, sha256(served)).find();

        assertThat(Files.readAllBytes(again)).isEqualTo(FAKE_ETCD);
        assertThat(requests).hasValue(2);
    }

    @Test
    void aPackageWithAnotherChecksumIsRefusedNamingTheUrlAndBothChecksums() throws IOException {
        served = deb("./usr/bin/etcd", FAKE_ETCD);
        String expected = "0".repeat(64);
        Path cache = temp.resolve("cache");

        assertThatThrownBy(() -> binary(null, null, cache, expected).find())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("checksum mismatch")
                .hasMessageContaining(uri().toString())
                .hasMessageContaining(sha256(served))
                .hasMessageContaining(expected);
        try (var files = Files.walk(cache)) {
            assertThat(files.filter(Files::isRegularFile)).isEmpty();
        }
    }

    @Test
    void aMissingPackageFailsNamingTheUrlTheStatusAndWhatToInstall() {
        served = null;

        assertThatThrownBy(() -> binary(null, null, temp, "0".repeat(64)).find())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("no etcd binary")
                .hasMessageContaining(uri() + " answered HTTP 404")
                .hasMessageContaining("apt-get install etcd-server")
                .hasMessageContaining(EtcdBinary.BINARY_ENV)
                .hasMessageContaining(EtcdServers.ENDPOINTS_ENV);
    }

    @Test
    void aPackageWithoutTheBinaryFailsNamingTheMissingFile() throws IOException {
        served = deb("./usr/bin/etcdctl", FAKE_ETCD);

        assertThatThrownBy(() -> binary(null, null, temp, sha256(served)).find())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("no file usr/bin/etcd in its data.tar.xz");
    }

    @Test
    void theSystemPropertyWinsAndABadPathFailsNamingTheSettingInsteadOfFallingThrough() throws IOException {
        Path etcd = executable(temp.resolve("bin"));
        served = deb("./usr/bin/etcd", FAKE_ETCD);

        assertThat(new EtcdBinary(etcd.toString(), "/nowhere/etcd", null, temp, LINUX, download("x")).find())
                .isEqualTo(etcd);
        assertThatThrownBy(() -> new EtcdBinary(
                                null,
                                "/nowhere/etcd",
                                etcd.getParent().toString(),
                                temp,
                                LINUX,
                                download(sha256(served)))
                        .find())
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("environment variable FENCING_ETCD_BINARY names '/nowhere/etcd', which is not an"
                        + " executable file");
        assertThat(requests).hasValue(0);
    }

    @Test
    void anEtcdOnThePathIsUsedWithoutDownloading() throws IOException {
        Path etcd = executable(temp.resolve("bin"));
        String path = temp.resolve("empty") + java.io.File.pathSeparator + etcd.getParent();

        assertThat(new EtcdBinary(null, " ", path, temp, LINUX, download("x")).find())
                .isEqualTo(etcd);
        assertThat(requests).hasValue(0);
    }

    @Test
    void anotherPlatformFailsWithoutDownloadingAndSaysWhatToInstall() {
        assertThatThrownBy(() -> new EtcdBinary(null, null, "/usr/bin", temp, "Mac OS X aarch64", download("x")).find())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("PATH=/usr/bin")
                .hasMessageContaining("for Linux x86_64 and this is Mac OS X aarch64")
                .hasMessageContaining("brew install etcd");
        assertThat(requests).hasValue(0);
    }

    @Test
    void onlyLinuxOnX86ItFitsTheDebianPackage() {
        assertThat(EtcdBinary.fitsPackage("Linux amd64")).isTrue();
        assertThat(EtcdBinary.fitsPackage("Linux x86_64")).isTrue();
        assertThat(EtcdBinary.fitsPackage("Linux aarch64")).isFalse();
        assertThat(EtcdBinary.fitsPackage("Windows 11 amd64")).isFalse();
    }

    private EtcdBinary binary(String property, String variable, Path cache, String packageSha256) {
        return new EtcdBinary(
                property, variable, temp.resolve("no-such-dir").toString(), cache, LINUX, download(packageSha256));
    }

    private EtcdBinary.Download download(String packageSha256) {
        return new EtcdBinary.Download(
                uri(), packageSha256, "usr/bin/etcd", sha256(FAKE_ETCD), FAKE_ETCD.length, "fake-etcd");
    }

    private URI uri() {
        return URI.create("http://127.0.0.1:" + http.getAddress().getPort() + "/pool/etcd.deb");
    }

    private static Path executable(Path directory) throws IOException {
        Files.createDirectories(directory);
        Path etcd = Files.write(directory.resolve("etcd"), FAKE_ETCD);
        assertThat(etcd.toFile().setExecutable(true)).isTrue();
        return etcd;
    }

    /** A Debian package as dpkg-deb builds it: debian-binary, control.tar.xz, data.tar.xz in an ar archive. */
    static byte[] deb(String path, byte[] content) throws IOException {
        ByteArrayOutputStream deb = new ByteArrayOutputStream();
        try (ArArchiveOutputStream ar = new ArArchiveOutputStream(deb)) {
            add(ar, "debian-binary", "2.0\n".getBytes(StandardCharsets.US_ASCII));
            add(ar, "control.tar.xz", tarXz("./control", "Package: etcd-server\n".getBytes(StandardCharsets.UTF_8)));
            add(ar, "data.tar.xz", tarXz(path, content));
        }
        return deb.toByteArray();
    }

    private static void add(ArArchiveOutputStream ar, String name, byte[] content) throws IOException {
        ar.putArchiveEntry(new ArArchiveEntry(name, content.length));
        ar.write(content);
        ar.closeArchiveEntry();
    }

    private static byte[] tarXz(String path, byte[] content) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (TarArchiveOutputStream tar = new TarArchiveOutputStream(new XZOutputStream(bytes, new LZMA2Options(0)))) {
            TarArchiveEntry directory = new TarArchiveEntry("./usr/");
            tar.putArchiveEntry(directory);
            tar.closeArchiveEntry();
            TarArchiveEntry file = new TarArchiveEntry(path);
            file.setSize(content.length);
            file.setMode(0755);
            tar.putArchiveEntry(file);
            tar.write(content);
            tar.closeArchiveEntry();
        }
        return bytes.toByteArray();
    }

    private static String sha256(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }
}
