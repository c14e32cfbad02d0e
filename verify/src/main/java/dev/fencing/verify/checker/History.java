package dev.fencing.verify.checker;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Every operation of one run, read from the clients' history files (one file per client, see the package
 * documentation), with each invoke paired with its completion, and, for an election, the participants' term
 * grants and validity readings ({@link TermEvent}), for the read/write-lock workload its reads ({@link Read}), each
 * paired the same way.
 *
 * <p>A client writes each line, newline included, in one write as it happens, so a client killed outright loses at
 * most the line it was writing, and leaves of it at most a part without its newline, possibly ending inside a
 * character: such a <em>torn</em> last line of a file is left out and named by {@link #tornLines()} (a run whose
 * client was not killed has none), and an invoke without a completion is an indeterminate ({@link Outcome#INFO})
 * operation. A client runs one operation at a time, so only the last operation of its file can lack a completion;
 * one whose client invoked another after it lost its completion line. An election participant records each grant
 * before it checks the term, so a check of a term its file never granted lost the grant's line. Those, an
 * unreadable line that ends with a newline (at the end of a file too: it was written whole, and wrong; a blank line
 * is unreadable), a completion without its invoke, a completion timed before its invoke (the same millisecond is
 * fine), one id invoked both as a read and as an append, two completions, or lines of one operation that disagree on
 * its client, resource or token make the history unusable: {@link HistoryException} names the file and line. A file's last operation
 * without a completion is named by {@link #unfinished()}, for a runner that knows whether its client was killed.
 *
 * <pre>{@code
 * History history = History.read(Path.of("target/verify/fenced/history"));
 * Operation op = history.operation(3000017).orElseThrow();
 * }</pre>
 *
 * Immutable after reading; thread-safe.
 */
public final class History {
    private final Map<Long, Operation> operations;
    private final List<TermEvent> termEvents;
    private final List<Read> reads;
    private final List<String> tornLines;
    private final List<String> unfinished;

    private History(
            Map<Long, Operation> operations,
            List<TermEvent> termEvents,
            List<Read> reads,
            List<String> tornLines,
            List<String> unfinished) {
        this.operations = Collections.unmodifiableMap(operations);
        this.termEvents = List.copyOf(termEvents);
        this.reads = List.copyOf(reads);
        this.tornLines = List.copyOf(tornLines);
        this.unfinished = List.copyOf(unfinished);
    }

    /** Reads every {@code *.jsonl} file in {@code directory}. */
    public static History read(Path directory) {
        List<Path> files = new ArrayList<>();
        try (DirectoryStream<Path> found = Files.newDirectoryStream(directory, "*.jsonl")) {
            found.forEach(files::add);
        } catch (IOException e) {
            throw new HistoryException("cannot list the history files in " + directory + ": " + e.getMessage(), e);
        }
        Collections.sort(files);
        return read(files);
    }

    /** Reads the given history files. */
    public static History read(Collection<Path> files) {
        Builder builder = new Builder();
        for (Path file : files) {
            byte[] bytes;
            try {
                bytes = Files.readAllBytes(file);
            } catch (IOException e) {
                throw new HistoryException("cannot read " + file + ": " + e.getMessage(), e);
            }
            List<byte[]> lines = lines(bytes);
            boolean lastEndsWithNewline = bytes.length == 0 || bytes[bytes.length - 1] == '\n';
            Set<String> grantedTerms = new HashSet<>(); // this file's grants, as resource/token
            long previousTime = 0; // the time of this file's line before the current one, once a grant came before it
            String open = null; // the operation of this file invoked last, while it has no completion
            int openLine = 0;
            for (int i = 0; i < lines.size(); i++) {
                boolean last = i == lines.size() - 1;
                HistoryEntry entry = null;
                TermEvent event = null;
                Read.Line read = null;
                try {
                    String line = text(lines.get(i));
                    if (line.isBlank()) {
                        // no client writes one: left out, it would hide what cut, filled or edited the file
                        throw new IllegalArgumentException("a blank line");
                    }
                    Map<String, Object> members = JsonLine.parse(line);
                    if (TermEvent.isTermEvent(members)) {
                        event = TermEvent.of(members);
                    } else if (Read.Line.isRead(members)) {
                        read = Read.Line.of(members);
                    } else {
                        entry = HistoryEntry.of(members);
                    }
                } catch (IllegalArgumentException e) {
                    if (last && !lastEndsWithNewline) {
                        builder.tornLines.add(file + " line " + (i + 1) + " is torn (" + e.getMessage()
                                + "): its client was killed while writing it, so it was left out: "
                                + excerpt(lines.get(i)));
                        break;
                    }
                    throw new HistoryException(file + " line " + (i + 1) + " is unreadable (" + e.getMessage() + ")"
                            + (last
                                    ? " although it ends with a newline: a client killed while writing a line leaves"
                                            + " it without one, so this line was written whole, and wrong"
                                    : " although more lines follow it: only the last line of a file can be torn, by"
                                            + " its client killed while writing it"));
                }
                String operation = read != null ? "read " + read.op() : entry != null ? "op " + entry.op() : null;
                boolean invoke = read != null
                        ? read.type() == HistoryEntry.Type.INVOKE
                        : entry != null && entry.type() == HistoryEntry.Type.INVOKE;
                if (invoke) {
                    if (open != null && !open.equals(operation)) {
                        throw new HistoryException(file + " line " + (i + 1) + ": " + operation + " was invoked while "
                                + open + ", invoked at line " + openLine + ", had no completion: a client runs one"
                                + " operation at a time, so that completion line is missing (only a file's last"
                                + " operation may lack one, its client stopped or killed while it ran)");
                    }
                    open = operation;
                    openLine = i + 1;
                } else if (operation != null && operation.equals(open)) {
                    open = null;
                }
                if (event != null && event.kind() == TermEvent.Kind.GRANT) {
                    if (!grantedTerms.isEmpty()) {
                        event = event.joinedAfter(previousTime);
                    }
                    grantedTerms.add(event.resource() + "/" + event.token());
                } else if (event != null && !grantedTerms.contains(event.resource() + "/" + event.token())) {
                    throw new HistoryException(file + " line " + (i + 1) + ": client " + event.client()
                            + "'s check of term " + event.token() + " of " + event.resource() + " (before op "
                            + event.op() + ") follows no grant of that term in its file: a participant records its"
                            + " grant before it checks the term, so that grant line is missing");
                }
                previousTime = event != null ? event.time() : read != null ? read.time() : entry.time();
                if (event != null) {
                    builder.termEvents.add(event);
                } else if (read != null) {
                    builder.addRead(read, file + " line " + (i + 1));
                } else {
                    builder.add(entry, file + " line " + (i + 1));
                }
            }
            if (open != null) {
                builder.unfinished.add(file + " line " + openLine + ": " + open + " has no completion");
            }
        }
        return builder.build();
    }

    /** The file's lines, split at each newline; a last line without its newline is a line too. */
    private static List<byte[]> lines(byte[] bytes) {
        List<byte[]> lines = new ArrayList<>();
        int start = 0;
        for (int i = 0; i < bytes.length; i++) {
            if (bytes[i] == '\n') {
                lines.add(Arrays.copyOfRange(bytes, start, i));
                start = i + 1;
            }
        }
        if (start < bytes.length) {
            lines.add(Arrays.copyOfRange(bytes, start, bytes.length));
        }
        return lines;
    }

    /**
     * A line's text, strictly UTF-8.
     *
     * @throws IllegalArgumentException when it is not UTF-8 (a torn line may end inside a character)
     */
    private static String text(byte[] line) {
        try {
            return StandardCharsets.UTF_8
                    .newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(line))
                    .toString();
        } catch (CharacterCodingException e) {
            throw new IllegalArgumentException("not UTF-8: " + e.getMessage());
        }
    }

    /** The start of a torn line, for a person to recognise it. */
    private static String excerpt(byte[] line) {
        String text = new String(line, StandardCharsets.UTF_8);
        return text.length() <= 200 ? text : text.substring(0, 200) + "...";
    }

    /** A history of the given entries, in order (for tests and tools that hold entries in memory). */
    public static History of(List<HistoryEntry> entries) {
        return of(entries, List.of());
    }

    /** A history of the given entries, in order, and an election's term events. */
    public static History of(List<HistoryEntry> entries, List<TermEvent> termEvents) {
        return of(entries, termEvents, List.of());
    }

    /** A history of the given entries, in order, an election's term events, and reads already paired. */
    public static History of(List<HistoryEntry> entries, List<TermEvent> termEvents, List<Read> reads) {
        Builder builder = new Builder();
        builder.termEvents.addAll(termEvents);
        for (int i = 0; i < entries.size(); i++) {
            builder.add(entries.get(i), "entry " + (i + 1));
        }
        History history = builder.build();
        return new History(history.operations, history.termEvents, reads, List.of(), List.of());
    }

    /** Every operation, in the order their appends were invoked per client file. */
    public Collection<Operation> operations() {
        return operations.values();
    }

    public Optional<Operation> operation(long id) {
        return Optional.ofNullable(operations.get(id));
    }

    public int size() {
        return operations.size();
    }

    /** An election's grants and validity readings, in the order of the files and their lines; empty otherwise. */
    public List<TermEvent> termEvents() {
        return termEvents;
    }

    /** The read/write-lock workload's reads, in the order of the files and their lines; empty otherwise. */
    public List<Read> reads() {
        return reads;
    }

    /**
     * The torn last lines left out, one sentence each naming the file, the line and its start: each says a client
     * was killed while it wrote; empty for a run whose clients all stopped on their own.
     */
    public List<String> tornLines() {
        return tornLines;
    }

    /**
     * The last operations of files that have no completion, one sentence each naming the file, the line of the
     * invoke and the operation: a client leaves one when it is killed (or fails) while it runs an operation, none
     * when it stops on its own, as it finishes the operation it runs first. A run whose clients all stopped on their
     * own and whose history has one lost a line.
     */
    public List<String> unfinished() {
        return unfinished;
    }

    /** Pairs invokes with completions, one operation at a time. Not thread-safe. */
    private static final class Builder {
        private final Map<Long, Pending> pending = new LinkedHashMap<>();
        private final List<TermEvent> termEvents = new ArrayList<>();
        private final List<String> tornLines = new ArrayList<>();
        private final List<String> unfinished = new ArrayList<>();
        private final Map<Long, Read.Line> readInvokes = new LinkedHashMap<>();
        private final Map<Long, Read.Line> readCompletions = new LinkedHashMap<>();

        void addRead(Read.Line line, String where) {
            if (line.type() == HistoryEntry.Type.INVOKE) {
                requireOneKind(line.op(), pending.containsKey(line.op()), where);
                if (readInvokes.putIfAbsent(line.op(), line) != null) {
                    throw new HistoryException(where + ": read " + line.op() + " is invoked twice");
                }
                return;
            }
            Read.Line invoke = readInvokes.get(line.op());
            if (invoke == null) {
                throw new HistoryException(where + ": a read " + line.type().label() + " of op " + line.op()
                        + " whose read was never invoked");
            }
            if (invoke.client() != line.client()
                    || !invoke.resource().equals(line.resource())
                    || invoke.token() != line.token()) {
                throw new HistoryException(where + ": read " + line.op() + " appears as client " + line.client()
                        + ", " + line.resource() + ", token " + line.token() + " but was invoked as client "
                        + invoke.client() + ", " + invoke.resource() + ", token " + invoke.token());
            }
            if (readCompletions.putIfAbsent(line.op(), line) != null) {
                throw new HistoryException(where + ": read " + line.op() + " completes twice");
            }
            requireNotBefore(line.time(), invoke.time(), "read " + line.op(), where);
        }

        void add(HistoryEntry entry, String where) {
            Pending op = pending.get(entry.op());
            if (entry.function() == HistoryEntry.Function.APPEND && entry.type() == HistoryEntry.Type.INVOKE) {
                if (op != null) {
                    throw new HistoryException(where + ": op " + entry.op() + " is invoked twice");
                }
                requireOneKind(entry.op(), readInvokes.containsKey(entry.op()), where);
                pending.put(entry.op(), new Pending(entry));
                return;
            }
            if (op == null) {
                throw new HistoryException(where + ": a " + entry.function().label() + " "
                        + entry.type().label() + " of op " + entry.op() + " whose append was never invoked");
            }
            if (op.invoke.client() != entry.client()
                    || !op.invoke.resource().equals(entry.resource())
                    || op.invoke.token() != entry.token()) {
                throw new HistoryException(where + ": op " + entry.op() + " appears as client " + entry.client() + ", "
                        + entry.resource() + ", token " + entry.token() + " but was invoked as client "
                        + op.invoke.client() + ", " + op.invoke.resource() + ", token " + op.invoke.token());
            }
            if (entry.function() == HistoryEntry.Function.APPEND) {
                if (op.completion != null) {
                    throw new HistoryException(where + ": the append of op " + entry.op() + " completes twice");
                }
                requireNotBefore(entry.time(), op.invoke.time(), "op " + entry.op(), where);
                op.completion = entry;
            } else if (entry.type() == HistoryEntry.Type.INVOKE) {
                if (op.publishInvoke != null) {
                    throw new HistoryException(where + ": op " + entry.op() + " is published twice");
                }
                op.publishInvoke = entry;
            } else {
                if (op.publishInvoke == null) {
                    throw new HistoryException(where + ": a publish "
                            + entry.type().label() + " of op " + entry.op() + " before its invoke");
                }
                if (op.publishCompletion != null) {
                    throw new HistoryException(where + ": the publish of op " + entry.op() + " completes twice");
                }
                requireNotBefore(entry.time(), op.publishInvoke.time(), "the publish of op " + entry.op(), where);
                op.publishCompletion = entry;
            }
        }

        /**
         * A completion is not timed before its invoke: the real-time checks order operations by these times, and
         * with a completion before its invoke (a client's clock stepped back, or the file was edited) they would
         * report a stale write or read that was none, or miss one. The same millisecond is a fast operation.
         */
        private static void requireNotBefore(long completion, long invoke, String operation, String where) {
            if (completion < invoke) {
                throw new HistoryException(where + ": " + operation + " completes at " + completion
                        + ", before its invoke at " + invoke + ": the times of this history cannot order its"
                        + " operations");
            }
        }

        /** An id is one operation's: a violation that names it must name one operation. */
        private static void requireOneKind(long op, boolean invokedAsTheOther, String where) {
            if (invokedAsTheOther) {
                throw new HistoryException(where + ": op " + op + " is both a read and an append: an id names one"
                        + " operation of the run");
            }
        }

        History build() {
            Map<Long, Operation> operations = new LinkedHashMap<>();
            for (Pending op : pending.values()) {
                operations.put(op.invoke.op(), op.toOperation());
            }
            List<Read> reads = new ArrayList<>();
            for (Read.Line invoke : readInvokes.values()) {
                Read.Line completion = readCompletions.get(invoke.op());
                Outcome outcome = completion == null
                        ? Outcome.INFO
                        : switch (completion.type()) {
                            case OK -> Outcome.OK;
                            case FAIL -> Outcome.FAIL;
                            case INFO, INVOKE -> Outcome.INFO;
                        };
                reads.add(new Read(
                        invoke.op(),
                        invoke.client(),
                        invoke.resource(),
                        invoke.token(),
                        invoke.time(),
                        outcome,
                        completion == null ? -1 : completion.time(),
                        completion == null ? -1 : completion.seen(),
                        completion == null ? "no completion recorded" : completion.error()));
            }
            return new History(operations, termEvents, reads, tornLines, unfinished);
        }
    }

    private static final class Pending {
        final HistoryEntry invoke;
        HistoryEntry completion;
        HistoryEntry publishInvoke;
        HistoryEntry publishCompletion;

        Pending(HistoryEntry invoke) {
            this.invoke = invoke;
        }

        Operation toOperation() {
            Operation.Publish publish = null;
            if (publishInvoke != null) {
                publish = new Operation.Publish(
                        !Boolean.FALSE.equals(publishInvoke.stamped()),
                        publishInvoke.time(),
                        outcome(publishCompletion),
                        publishCompletion == null ? -1 : publishCompletion.time(),
                        publishCompletion == null ? null : publishCompletion.partition(),
                        publishCompletion == null ? null : publishCompletion.offset(),
                        error(publishCompletion));
            }
            return new Operation(
                    invoke.op(),
                    invoke.client(),
                    invoke.resource(),
                    invoke.token(),
                    invoke.path(),
                    invoke.time(),
                    outcome(completion),
                    completion == null ? -1 : completion.time(),
                    error(completion),
                    publish);
        }

        private static Outcome outcome(HistoryEntry completion) {
            if (completion == null) {
                return Outcome.INFO;
            }
            return switch (completion.type()) {
                case OK -> Outcome.OK;
                case FAIL -> Outcome.FAIL;
                case INFO, INVOKE -> Outcome.INFO;
            };
        }

        private static String error(HistoryEntry completion) {
            if (completion == null) {
                return "no completion recorded";
            }
            return completion.error();
        }
    }
}
