package dev.fencing.harness;

import java.util.ArrayList;
import java.util.List;

/**
 * Every child JVM this process started and has not yet cleaned up, plus whatever else must be stopped when
 * the process ends. One shutdown hook (Ctrl-C, SIGTERM, an uncaught exception that ends {@code main}, or a
 * normal exit) thaws and kills every remaining child, then closes the registered resources (the embedded
 * servers). A child frozen when this JVM is killed outright is thawed by its resumer (see {@link
 * ChildJvm}) and exits when it sees its standard input end.
 *
 * <p>Thread-safe.
 *
 * <pre>{@code
 * ExitCleanup.onInterrupt(() -> System.err.println("tool: interrupted; the servers were stopped"));
 * ExitCleanup.register(servers);
 * ...
 * ExitCleanup.unregister(servers);
 * }</pre>
 */
public final class ExitCleanup {
    private static final List<ChildJvm> CHILDREN = new ArrayList<>();
    private static final List<AutoCloseable> RESOURCES = new ArrayList<>();
    private static boolean hooked;
    private static volatile boolean finished;
    private static volatile Runnable onInterrupt = () -> {};

    private ExitCleanup() {}

    public static synchronized void register(ChildJvm child) {
        hook();
        CHILDREN.add(child);
    }

    public static synchronized void register(AutoCloseable resource) {
        hook();
        RESOURCES.add(resource);
    }

    public static synchronized void unregister(Object childOrResource) {
        CHILDREN.remove(childOrResource);
        RESOURCES.remove(childOrResource);
    }

    /** What to say when the process ends (Ctrl-C, SIGTERM) before {@link #finished()} was called. */
    public static synchronized void onInterrupt(Runnable message) {
        hook();
        onInterrupt = message;
    }

    /** The program reached its end normally: the shutdown hook no longer reports an interruption. */
    public static void finished() {
        finished = true;
    }

    /** Thaws and kills every registered child, then closes the resources, newest first. */
    public static void cleanUp() {
        List<ChildJvm> children;
        List<AutoCloseable> resources;
        synchronized (ExitCleanup.class) {
            children = new ArrayList<>(CHILDREN);
            resources = new ArrayList<>(RESOURCES);
            CHILDREN.clear();
            RESOURCES.clear();
        }
        for (ChildJvm child : children) {
            try {
                child.close();
            } catch (RuntimeException e) {
                // keep going: the other children must not be left running
            }
        }
        for (int i = resources.size() - 1; i >= 0; i--) {
            try {
                resources.get(i).close();
            } catch (Exception e) {
                // at exit there is nobody left to tell
            }
        }
    }

    private static void hook() {
        if (!hooked) {
            Runtime.getRuntime()
                    .addShutdownHook(new Thread(
                            () -> {
                                cleanUp();
                                if (!finished) {
                                    onInterrupt.run();
                                }
                            },
                            "harness-exit-cleanup"));
            hooked = true;
        }
    }
}
