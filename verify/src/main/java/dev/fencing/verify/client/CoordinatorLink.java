package dev.fencing.verify.client;

import dev.fencing.harness.ParentLink;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.util.StringJoiner;
import java.util.function.Consumer;

/**
 * A child JVM's line to its coordinator: events go out on standard output, one line each ({@code E <epoch ms>
 * <kind> <fields...>}), commands come in on standard input, one line each. The child never outlives the
 * coordinator: when standard input ends (the pipe closes whenever the coordinator dies, however it dies) or its
 * original parent process is gone, it halts at once. Thread-safe.
 */
final class CoordinatorLink {
    static final int EXIT_COORDINATOR_GONE = 3;

    private final PrintStream out;

    CoordinatorLink(PrintStream out) {
        this.out = out;
    }

    /** Starts reading commands (each handed to {@code commands} on the reader thread) and watching the parent. */
    void listen(Consumer<String> commands) {
        ParentLink.listen("coordinator", commands, EXIT_COORDINATOR_GONE);
    }

    /** Sends one event; fields must not contain spaces or line breaks. */
    synchronized void emit(String kind, Object... fields) {
        StringJoiner line = new StringJoiner(" ");
        line.add("E").add(Long.toString(System.currentTimeMillis())).add(kind);
        for (Object field : fields) {
            line.add(String.valueOf(field).replaceAll("\\s+", "_"));
        }
        out.println(line);
        out.flush();
    }

    /** Reports the heap in use after a full collection: {@code HEAP <bytes>}. */
    void emitHeap() {
        System.gc();
        emit("HEAP", ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed());
    }
}
