package dev.fencing.spring;

import java.util.concurrent.Callable;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;

/** Calls into a service instance from a thread of their own, as requests to it would come. */
final class Calls {
    private Calls() {}

    /** Runs {@code call} on a thread of its own, named after the service instance it calls. */
    static <T> Future<T> callAt(String service, Callable<T> call) {
        FutureTask<T> task = new FutureTask<>(call);
        Thread thread = new Thread(task, "request-to-" + service);
        thread.setDaemon(true);
        thread.start();
        return task;
    }
}
