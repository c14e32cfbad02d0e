package dev.fencing.spring.internal;

import dev.fencing.lock.Leadership;
import dev.fencing.spring.FencedElectionParticipant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/**
 * Health of the toolkit's parts in this application: DOWN when a lock service's client cannot reach its service
 * (the Curator client is not connected to ZooKeeper, or etcd does not answer a read: no lock can be taken, and held
 * leases are or soon turn invalid), or a declared consumer is retrying a transient failure (no progress until it
 * passes) or has failed.
 * Details: the connection (see {@link ZooKeeperConnection} and {@link EtcdConnection}), each consumer's state, the leases held by {@code @FencedLocked} methods with
 * their tokens, and this instance's place in the election (whether it leads, with its term's token).
 */
public final class FencingHealthIndicator extends AbstractHealthIndicator {
    private final List<LockServiceConnection> connections;
    private final ConsumerStates consumers; // null: none declared
    private final FencedLockedInterceptor locked; // null: the annotation is off
    private final FencedElectionParticipant election; // null: no election

    public FencingHealthIndicator(
            List<LockServiceConnection> connections,
            ConsumerStates consumers,
            FencedLockedInterceptor locked,
            FencedElectionParticipant election) {
        super("fencing health check failed");
        this.connections = List.copyOf(connections);
        this.consumers = consumers;
        this.locked = locked;
        this.election = election;
    }

    @Override
    protected void doHealthCheck(Health.Builder builder) {
        boolean up = true;
        for (LockServiceConnection connection : connections) {
            up &= connection.report(builder);
        }
        if (consumers != null) {
            builder.withDetail("consumers", consumers.states());
            up &= !consumers.anyDown();
        }
        if (locked != null) {
            List<Map<String, Object>> leases = locked.heldLeases().stream()
                    .map(h -> {
                        Map<String, Object> lease = new LinkedHashMap<>();
                        lease.put("path", h.path());
                        lease.put("token", h.token());
                        lease.put("valid", h.valid());
                        lease.put("method", h.method());
                        return lease;
                    })
                    .toList();
            builder.withDetail("leases", leases);
        }
        if (election != null) {
            // a follower is healthy: leading is not this instance's duty, taking part is
            Map<String, Object> participant = new LinkedHashMap<>();
            participant.put("path", election.path());
            participant.put("participantId", election.participantId());
            participant.put("joined", election.isRunning());
            Optional<Leadership> term = election.leadership();
            participant.put("leader", term.isPresent());
            term.ifPresent(t -> participant.put("token", t.token()));
            builder.withDetail("election", participant);
        }
        if (up) {
            builder.up();
        } else {
            builder.down();
        }
    }
}
