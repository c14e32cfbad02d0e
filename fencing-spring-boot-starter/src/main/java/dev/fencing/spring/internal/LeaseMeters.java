package dev.fencing.spring.internal;

import dev.fencing.lock.FencedLockListener;
import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLoss;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Locale;
import org.springframework.beans.factory.ObjectProvider;

/**
 * Counts, on the application's {@link MeterRegistry} if it has one, lease invalidations ({@code
 * fencing.lock.leases.invalidated}, tagged {@code cause}) and token regressions ({@code
 * fencing.lock.token.regressions}). Not tagged by path: a service with one lock per SKU would grow one
 * meter per SKU.
 */
public final class LeaseMeters implements FencedLockListener {
    private final ObjectProvider<MeterRegistry> registry;

    public LeaseMeters(ObjectProvider<MeterRegistry> registry) {
        this.registry = registry;
    }

    @Override
    public void leaseInvalidated(Lease lease, LeaseLoss cause) {
        registry.ifAvailable(r -> Counter.builder("fencing.lock.leases.invalidated")
                .description("Leases that turned invalid, by cause")
                .tag("cause", cause.name().toLowerCase(Locale.ROOT))
                .register(r)
                .increment());
    }

    @Override
    public void tokenRegressed(String lockPath, long previousToken, long newToken, String explanation) {
        registry.ifAvailable(r -> Counter.builder("fencing.lock.token.regressions")
                .description("Grants whose token was lower than one seen before on the same path")
                .register(r)
                .increment());
    }
}
