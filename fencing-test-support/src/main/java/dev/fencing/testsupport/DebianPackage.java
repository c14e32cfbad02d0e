package dev.fencing.testsupport;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import org.apache.commons.compress.archivers.ar.ArArchiveEntry;
import org.apache.commons.compress.archivers.ar.ArArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.compressors.gzip.GzipCompressorInputStream;
import org.apache.commons.compress.compressors.xz.XZCompressorInputStream;

/**
 * Reads one file out of a Debian package ({@code .deb}) without {@code dpkg}: a {@code .deb} is an {@code ar}
 * archive whose {@code data.tar.xz} (or {@code .gz}, or plain {@code data.tar}) holds the installed files.
 */
final class DebianPackage {
    private DebianPackage() {}

    /**
     * Copies the installed file {@code installedPath} (for example {@code usr/bin/etcd}) out of the package
     * {@code deb} to {@code target}, replacing it.
     *
     * @throws IOException if the package cannot be read, holds no data archive, or the data archive holds no
     *     such file; the message names the package and what was missing
     */
    static void extract(Path deb, String installedPath, Path target) throws IOException {
        String wanted = normalize(installedPath);
        try (ArArchiveInputStream ar = new ArArchiveInputStream(new BufferedInputStream(Files.newInputStream(deb)))) {
            for (ArArchiveEntry entry = ar.getNextEntry(); entry != null; entry = ar.getNextEntry()) {
                if (entry.getName().startsWith("data.tar")) {
                    try (TarArchiveInputStream tar = new TarArchiveInputStream(decompress(entry.getName(), ar))) {
                        for (TarArchiveEntry file = tar.getNextEntry(); file != null; file = tar.getNextEntry()) {
                            if (file.isFile() && normalize(file.getName()).equals(wanted)) {
                                Files.copy(tar, target, StandardCopyOption.REPLACE_EXISTING);
                                return;
                            }
                        }
                    }
                    throw new IOException(deb + " has no file " + wanted + " in its " + entry.getName());
                }
            }
        }
        throw new IOException(deb + " is not a Debian package: no data.tar.* member in its ar archive");
    }

    private static InputStream decompress(String member, InputStream in) throws IOException {
        if (member.endsWith(".xz")) {
            return new XZCompressorInputStream(in);
        }
        if (member.endsWith(".gz")) {
            return new GzipCompressorInputStream(in);
        }
        if (member.equals("data.tar")) {
            return in;
        }
        throw new IOException("cannot read " + member + " (only .xz, .gz and plain tar are supported)");
    }

    private static String normalize(String path) {
        String p = path;
        while (p.startsWith("./") || p.startsWith("/")) {
            p = p.substring(p.startsWith("./") ? 2 : 1);
        }
        return p;
    }
}
