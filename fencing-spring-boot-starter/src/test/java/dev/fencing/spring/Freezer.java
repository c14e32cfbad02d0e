package dev.fencing.spring;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jdbi.v3.core.statement.SqlLogger;
import org.jdbi.v3.core.statement.StatementContext;

/**
 * Freezes, once armed, the next thread that is about to send a statement on the {@code inventory} table,
 * until thawed: the holder has its lease and its write is ready, but nothing has left the process yet (a
 * stop-the-world pause at the worst moment).
 */
final class Freezer implements SqlLogger {
    private final AtomicBoolean armed = new AtomicBoolean();
    private volatile CountDownLatch frozen = new CountDownLatch(1);
    private volatile CountDownLatch thaw = new CountDownLatch(1);

    void arm() {
        frozen = new CountDownLatch(1);
        thaw = new CountDownLatch(1);
        armed.set(true);
    }

    void awaitFrozen() throws InterruptedException {
        if (!frozen.await(30, TimeUnit.SECONDS)) {
            throw new AssertionError("the holder never reached its write");
        }
    }

    void thaw() {
        thaw.countDown();
    }

    @Override
    public void logBeforeExecution(StatementContext context) {
        if (context.getRenderedSql().contains("inventory") && armed.compareAndSet(true, false)) {
            frozen.countDown();
            try {
                if (!thaw.await(60, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("never thawed");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while frozen", e);
            }
        }
    }
}
