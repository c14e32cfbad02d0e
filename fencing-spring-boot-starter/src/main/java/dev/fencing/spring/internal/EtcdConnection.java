package dev.fencing.spring.internal;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.options.GetOption;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.springframework.boot.health.contributor.Health;

/**
 * The jetcd client's reach to etcd: jetcd keeps no connection state to read, so each check sends one
 * linearizable read (a count of the keys under the locks' prefix), which only a member with a leader answers.
 * Down when no answer comes within {@link #CHECK_TIMEOUT}: then no lock can be taken, and held leases read invalid
 * once their keep-alives go unanswered for a TTL.
 */
public final class EtcdConnection implements LockServiceConnection {
    /** How long a check waits for etcd's answer. */
    public static final Duration CHECK_TIMEOUT = Duration.ofSeconds(2);

    private final Client client;
    private final List<String> endpoints; // empty: not known (the application's own client)
    private final ByteSequence prefix;

    public EtcdConnection(Client client, List<String> endpoints, String prefix) {
        this.client = Objects.requireNonNull(client, "client");
        this.endpoints = List.copyOf(endpoints);
        this.prefix = ByteSequence.from(prefix, StandardCharsets.UTF_8);
    }

    @Override
    public boolean report(Health.Builder health) {
        String failure = null;
        CompletableFuture<?> read = client.getKVClient()
                .get(
                        prefix,
                        GetOption.builder().isPrefix(true).withCountOnly(true).build());
        try {
            read.get(CHECK_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            failure = "interrupted";
        } catch (TimeoutException e) {
            failure = "no answer within " + CHECK_TIMEOUT.toMillis() + " ms";
        } catch (ExecutionException e) {
            failure = String.valueOf(e.getCause());
        } finally {
            read.cancel(true);
        }
        health.withDetail("etcd", failure == null ? "connected" : "not connected");
        if (!endpoints.isEmpty()) {
            health.withDetail("etcdEndpoints", endpoints);
        }
        if (failure != null) {
            health.withDetail("etcdError", failure);
        }
        return failure == null;
    }
}
