package dev.fencing.spring.internal;

import org.springframework.boot.health.contributor.Health;

/**
 * What the {@code fencing} health indicator reports of one lock service's client: whether locks can be taken on it
 * now, with details. One per client, so that the indicator loads neither Curator nor jetcd when the application
 * does not have it.
 */
public interface LockServiceConnection {
    /** Adds this client's details to {@code health}; false when no lock can be taken on it now. */
    boolean report(Health.Builder health);
}
