package dev.fencing.demo;

import dev.fencing.harness.ChildJvm;
import java.util.ArrayList;
import java.util.List;

/**
 * Every worker JVM this process started and has not yet cleaned up, plus whatever else must be stopped when
 * the process ends. One shutdown hook (Ctrl-C, SIGTERM, an uncaught exception that ends {@code main}, or a
 * normal exit) thaws and kills every remaining worker, then closes the registered resources (the embedded
 * servers). A worker frozen when this JVM is killed outright is thawed by its resumer (see {@link
 * ChildJvm}) and exits when it sees its standard input end.
 *
 * <p>Thread-safe.
 */
final class WorkerFleet {
    private static final List<ChildJvm> WORKERS = new ArrayList<>();
    private static final List<AutoCloseable> RESOURCES = new ArrayList<>();
    private static boolean hooked;
    private static volatile boolean finished;
    private static volatile Runnable onInterrupt = () -> {};

    private WorkerFleet() {}

    static synchronized void register(ChildJvm worker) {
        hook();
        WORKERS.add(worker);
    }

    static synchronized void register(AutoCloseable resource) {
        hook();
        RESOURCES.add(resource);
    }

    static synchronized void unregister(Object workerOrResource) {
        WORKERS.remove(workerOrResource);
        RESOURCES.remove(workerOrResource);
    }

    /** What to say when the process ends (Ctrl-C, SIGTERM) before {@link #finished()} was called. */
    static synchronized void onInterrupt(Runnable message) {
        hook();
        onInterrupt = message;
    }

    /** The program reached its end normally: the shutdown hook no longer reports an interruption. */
    static void finished() {
        finished = true;
    }

    /** Thaws and kills every registered worker, then closes the resources, newest first. */
    static void cleanUp() {
        List<ChildJvm> workers;
        List<AutoCloseable> resources;
        synchronized (WorkerFleet.class) {
            workers = new ArrayList<>(WORKERS);
            resources = new ArrayList<>(RESOURCES);
            WORKERS.clear();
            RESOURCES.clear();
        }
        for (ChildJvm worker : workers) {
            try {
                worker.close();
            } catch (RuntimeException e) {
                // keep going: the other workers must not be left running
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
                            "demo-cleanup"));
            hooked = true;
        }
    }
}
