package com.example.jobs;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/** Holds the first run that reaches it until the test opens it; every later run passes. */
public final class Gate {
    private final AtomicBoolean taken = new AtomicBoolean();
    private final CountDownLatch reached = new CountDownLatch(1);
    private final CountDownLatch opened = new CountDownLatch(1);
    private volatile Jobs.Run held;

    /** A gate that holds nobody. */
    public static Gate passing() {
        Gate gate = new Gate();
        gate.taken.set(true);
        return gate;
    }

    void pass(Jobs.Run run) {
        if (!taken.compareAndSet(false, true)) {
            return;
        }
        held = run;
        reached.countDown();
        try {
            if (!opened.await(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the test never opened the gate");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Waits until a run is held, and returns it. */
    public Jobs.Run awaitHeld() throws InterruptedException {
        if (!reached.await(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("no run reached the gate within 30 s");
        }
        return held;
    }

    public void open() {
        opened.countDown();
    }
}
