package dev.fencing.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A locked method that returns clears the interrupt its lost lease caused, unless an enclosing locked method of the
 * same thread was interrupted too, also when the listener interrupts that one while the inner one finishes.
 */
class NestedInterruptTest {

    /** A lease as the interceptor's held-lease records read it: a path and a token, lost. */
    private static Lease lost(String path) {
        return new Lease() {
            @Override
            public long token() {
                return 2;
            }

            @Override
            public String path() {
                return path;
            }

            @Override
            public boolean isValid() {
                return false;
            }

            @Override
            public void ensureValid() {}

            @Override
            public boolean verify() {
                return false;
            }

            @Override
            public LeaseLoss lossCause() {
                return LeaseLoss.CONNECTION_SUSPENDED;
            }

            @Override
            public void close() {}
        };
    }

    @AfterEach
    void reset() {
        FencedLockedInterceptor.beforeClear = () -> {};
        Thread.interrupted();
    }

    @Test
    void anEnclosingMethodThatTheListenerInterruptsWhileTheInnerOneFinishesKeepsItsInterrupt() {
        Thread me = Thread.currentThread();
        FencedLockedInterceptor.HeldLease outer = new FencedLockedInterceptor.HeldLease(lost("/outer"), null, me);
        FencedLockedInterceptor.HeldLease inner = new FencedLockedInterceptor.HeldLease(lost("/inner"), null, me);
        inner.interrupt(LeaseLoss.CONNECTION_SUSPENDED);
        // the listener reaches the outer method just as the inner one is about to clear its own interrupt
        FencedLockedInterceptor.beforeClear = () -> outer.interrupt(LeaseLoss.CONNECTION_SUSPENDED);

        FencedLockedInterceptor.finish(inner, List.of(outer));

        assertThat(Thread.interrupted()).as("the outer method's interrupt").isTrue();
    }

    @Test
    void anInnerMethodsOwnInterruptIsClearedWhenNoEnclosingMethodWasInterrupted() {
        Thread me = Thread.currentThread();
        FencedLockedInterceptor.HeldLease outer = new FencedLockedInterceptor.HeldLease(lost("/outer"), null, me);
        FencedLockedInterceptor.HeldLease inner = new FencedLockedInterceptor.HeldLease(lost("/inner"), null, me);
        inner.interrupt(LeaseLoss.CONNECTION_SUSPENDED);

        FencedLockedInterceptor.finish(inner, List.of(outer));

        assertThat(Thread.interrupted()).isFalse();
    }
}
