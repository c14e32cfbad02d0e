package dev.fencing.lock.etcd.internal;

import java.nio.channels.ClosedChannelException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * Sends a request to etcd again while its failure is one a later attempt can get past: a connection to a member
 * that died: {@code UNAVAILABLE} (which includes etcd's "request timed out, possibly due to previous leader
 * failure"), or the connection closed under a request already sent ({@code UNKNOWN: channel closed}, a
 * {@link ClosedChannelException} underneath: the member was killed while the request was in flight). Only for requests that may be repeated: a read, a delete, the create-if-absent transaction, a lease
 * grant (the acquire revokes a lease it was granted but did not take), a lease revoke (sent again after the first
 * landed, it finds no lease). A request whose wait is given up (timed out, interrupted) is cancelled, and jetcd then
 * stops retrying it, perhaps before it was sent.
 */
final class Requests {
    private static final long BACKOFF_MILLIS = 100;

    private Requests() {}

    /**
     * The answer, waiting at most {@code timeoutNanos} over all attempts.
     *
     * @throws TimeoutException when no attempt was answered in time
     * @throws ExecutionException with the last failure, when it is not one to retry or time ran out
     */
    static <T> T retrying(Supplier<CompletableFuture<T>> request, long timeoutNanos)
            throws InterruptedException, ExecutionException, TimeoutException {
        long giveUpAt = System.nanoTime() + timeoutNanos;
        while (true) {
            CompletableFuture<T> attempt = request.get();
            try {
                return attempt.get(Math.max(0, giveUpAt - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (TimeoutException | InterruptedException e) {
                attempt.cancel(false);
                throw e;
            } catch (ExecutionException e) {
                if (!worthRetrying(e.getCause()) || giveUpAt - System.nanoTime() <= BACKOFF_MILLIS * 1_000_000) {
                    throw e;
                }
                Thread.sleep(BACKOFF_MILLIS);
            }
        }
    }

    static boolean worthRetrying(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (String.valueOf(t.getMessage()).startsWith("UNAVAILABLE") || t instanceof ClosedChannelException) {
                return true;
            }
        }
        return false;
    }
}
