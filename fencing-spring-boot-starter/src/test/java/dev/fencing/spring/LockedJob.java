package dev.fencing.spring;

import dev.fencing.lock.Lease;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Locked methods the starter's tests call on either lock service: report the token, hold the lock until told, wait
 * until interrupted and report what the lease says then. Public, so that a context on a filtered class loader can
 * proxy it.
 */
public class LockedJob {
    @FencedLocked("/locks/jobs/#{#name}")
    public long tokenOf(String name, @FenceToken long token) {
        return token;
    }

    @FencedLocked(value = "/locks/jobs/#{#name}", timeout = "500ms")
    public long tokenWithinHalfASecond(String name, @FenceToken long token) {
        return token;
    }

    /** Counts {@code entered} down under the lock, then holds it until {@code release} is counted down. */
    @FencedLocked("/locks/jobs/#{#name}")
    public long holdUntil(String name, CountDownLatch entered, CountDownLatch release, @FenceToken long token)
            throws InterruptedException {
        entered.countDown();
        if (!release.await(60, TimeUnit.SECONDS)) {
            throw new IllegalStateException("never released");
        }
        return token;
    }

    @FencedLocked(value = "/locks/jobs/#{#name}", interruptOnLoss = true)
    public String waitForever(String name, CountDownLatch started, Lease lease) {
        started.countDown();
        try {
            new CountDownLatch(1).await();
            return "never";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // as a method should: the flag stays set for whoever is next
            return "interrupted; lease valid: " + lease.isValid() + ", lost: " + lease.lossCause();
        }
    }

    /** A locked method that calls another locked method, then waits itself: both ask to be interrupted. */
    public static class Outer {
        private final LockedJob inner;

        public Outer(LockedJob inner) {
            this.inner = inner;
        }

        @FencedLocked(value = "/locks/jobs/outer-#{#name}", interruptOnLoss = true)
        public String waitInsideThenWait(String name, CountDownLatch started) {
            String first = inner.waitForever(name, started, null);
            try {
                new CountDownLatch(1).await(20, TimeUnit.SECONDS);
                return first + "; outer wait timed out";
            } catch (InterruptedException e) {
                return first + "; outer wait interrupted";
            }
        }
    }
}
