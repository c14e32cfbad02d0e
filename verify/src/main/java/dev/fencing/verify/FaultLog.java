package dev.fencing.verify;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Every fault of a run, with its start and end, written to {@code nemesis.jsonl} as it ends (one JSON object a
 * line, flushed), counted by kind, and printed as progress. The timeline draws them; the checker does not need
 * them. Thread-safe.
 */
final class FaultLog implements AutoCloseable {
    private final FileOutputStream file;
    private final PrintStream progress;
    private final String label;
    private final long runStart;
    private final List<Fault> faults = new ArrayList<>();
    private final Map<FaultKind, Integer> counted = new EnumMap<>(FaultKind.class);

    FaultLog(Path path, PrintStream progress, String label, long runStart) {
        try {
            this.file = new FileOutputStream(path.toFile(), true);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open the fault log " + path, e);
        }
        this.progress = progress;
        this.label = label;
        this.runStart = runStart;
    }

    synchronized void add(Fault fault) {
        faults.add(fault);
        if (fault.counted()) {
            counted.merge(fault.kind(), 1, Integer::sum);
        }
        String line = "{\"kind\":\"" + fault.kind().jsonName() + "\",\"target\":\"" + fault.target() + "\",\"start\":"
                + fault.start() + ",\"end\":" + fault.end() + ",\"counted\":" + fault.counted() + ",\"detail\":\""
                + fault.detail().replace("\\", "\\\\").replace("\"", "\\\"") + "\"}\n";
        try {
            file.write(line.getBytes(StandardCharsets.UTF_8));
            file.flush();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the fault log", e);
        }
        progress.printf(
                Locale.ROOT,
                "[%s] %5.1fs %s %s: %s%s%n",
                label,
                (fault.start() - runStart) / 1000.0,
                fault.kind().flagName(),
                fault.target(),
                fault.detail(),
                fault.counted() ? "" : " (not counted)");
    }

    synchronized int counted(FaultKind kind) {
        return counted.getOrDefault(kind, 0);
    }

    synchronized Map<FaultKind, Integer> countedByKind() {
        Map<FaultKind, Integer> copy = new EnumMap<>(FaultKind.class);
        for (FaultKind kind : FaultKind.values()) {
            copy.put(kind, counted.getOrDefault(kind, 0));
        }
        return copy;
    }

    synchronized List<Fault> faults() {
        return List.copyOf(faults);
    }

    /** A line for progress output and notes that are not faults (a consumer that stopped on its own). */
    void note(String message) {
        progress.printf(
                Locale.ROOT, "[%s] %5.1fs %s%n", label, (System.currentTimeMillis() - runStart) / 1000.0, message);
    }

    @Override
    public synchronized void close() {
        try {
            file.close();
        } catch (IOException e) {
            // written and flushed line by line already
        }
    }
}
