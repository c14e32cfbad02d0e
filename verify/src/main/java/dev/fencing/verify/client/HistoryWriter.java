package dev.fencing.verify.client;

import dev.fencing.harness.Json;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * Appends a client's history, one JSON object per line, each written to the file as it happens: the process
 * keeps nothing buffered, so a SIGKILL loses at most the line being written. The format is the checker's
 * contract (see {@code dev.fencing.verify.checker}); this writer shares no code with the checker's reader.
 * Thread-safe.
 */
final class HistoryWriter implements AutoCloseable {
    private final FileOutputStream file;
    private final int client;

    HistoryWriter(Path path, int client) {
        try {
            this.file = new FileOutputStream(path.toFile(), true);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open the history file " + path, e);
        }
        this.client = client;
    }

    void invokeAppend(long op, String resource, long token, String path) {
        write("invoke", "append", op, resource, token, ",\"path\":" + Json.quote(path));
    }

    void okAppend(long op, String resource, long token) {
        write("ok", "append", op, resource, token, "");
    }

    void failAppend(long op, String resource, long token, String reason) {
        write("fail", "append", op, resource, token, ",\"error\":" + Json.quote(reason));
    }

    void infoAppend(long op, String resource, long token, String error) {
        write("info", "append", op, resource, token, ",\"error\":" + Json.quote(error));
    }

    void invokePublish(long op, String resource, long token, boolean stamped) {
        write("invoke", "publish", op, resource, token, ",\"stamped\":" + stamped);
    }

    void okPublish(long op, String resource, long token, int partition, long offset) {
        write("ok", "publish", op, resource, token, ",\"partition\":" + partition + ",\"offset\":" + offset);
    }

    void infoPublish(long op, String resource, long token, String error) {
        write("info", "publish", op, resource, token, ",\"error\":" + Json.quote(error));
    }

    /** An election term granted to this client: {@code time} is when it learned it leads. */
    void grant(long op, String resource, long token, long time) {
        write("ok", "grant", op, resource, token, time, "");
    }

    /** What a check of the term's validity answered before write {@code op}: {@code time} is when it began. */
    void check(long op, String resource, long token, long time, boolean valid) {
        write("ok", "check", op, resource, token, time, ",\"valid\":" + valid);
    }

    /** A read of {@code resource}'s list under a read grant's {@code token}. */
    void invokeRead(long op, String resource, long token) {
        write("invoke", "read", op, resource, token, "");
    }

    /** A read returned: it saw the first {@code seen} ids; {@code time} is read before the last look at the row. */
    void okRead(long op, String resource, long token, long time, int seen) {
        write("ok", "read", op, resource, token, time, ",\"seen\":" + seen);
    }

    /** A read discarded as stale; {@code time} as for {@link #okRead}. */
    void failRead(long op, String resource, long token, long time, String reason) {
        write("fail", "read", op, resource, token, time, ",\"error\":" + Json.quote(reason));
    }

    void infoRead(long op, String resource, long token, String error) {
        write("info", "read", op, resource, token, ",\"error\":" + Json.quote(error));
    }

    private void write(String type, String function, long op, String resource, long token, String extra) {
        write(type, function, op, resource, token, System.currentTimeMillis(), extra);
    }

    private synchronized void write(
            String type, String function, long op, String resource, long token, long time, String extra) {
        String line = "{\"type\":\"" + type + "\",\"f\":\"" + function + "\",\"op\":" + op + ",\"client\":" + client
                + ",\"resource\":" + Json.quote(resource) + ",\"token\":" + token + ",\"time\":" + time
                + extra + "}\n";
        try {
            file.write(line.getBytes(StandardCharsets.UTF_8));
            file.flush();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the history", e);
        }
    }

    @Override
    public synchronized void close() {
        try {
            file.close();
        } catch (IOException e) {
            // the lines are written already; nothing to flush
        }
    }
}
