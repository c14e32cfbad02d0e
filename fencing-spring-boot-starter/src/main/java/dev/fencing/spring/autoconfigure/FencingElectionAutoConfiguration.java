package dev.fencing.spring.autoconfigure;

import dev.fencing.internal.Text;
import dev.fencing.lock.FencedLeaderElection;
import dev.fencing.spring.FencedElectionParticipant;
import dev.fencing.spring.FencingProperties;
import dev.fencing.spring.LockService;
import dev.fencing.spring.internal.LockPaths;
import java.lang.management.ManagementFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;

/**
 * This instance's {@link FencedElectionParticipant} in the election at {@code fencing.election.path}, on the
 * application's single {@link LockService} (ZooKeeper's or etcd's locks): it joins when the context starts, publishes {@code TermStartedEvent}
 * and {@code TermEndedEvent}, and steps down when the context stops. Backs off for the application's own
 * participant bean; off with {@code fencing.election.enabled=false}. A path the lock service refuses (ending in
 * {@code /}, with an empty segment, with control characters) fails the start when the bean is made, naming the
 * property, also with {@code fencing.election.auto-startup=false}.
 */
@AutoConfiguration(after = {FencingZooKeeperAutoConfiguration.class, FencingEtcdAutoConfiguration.class})
@ConditionalOnClass(FencedLeaderElection.class)
@ConditionalOnSwitch("fencing.election.enabled")
@ConditionalOnProperty("fencing.election.path")
@EnableConfigurationProperties(FencingProperties.class)
public class FencingElectionAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnSingleCandidate(LockService.class)
    public FencedElectionParticipant fencedElectionParticipant(
            LockService locks, FencingProperties properties, ApplicationEventPublisher events, Environment env) {
        FencingProperties.Election election = properties.getElection();
        String path = election.getPath();
        if (path == null || path.isBlank()) {
            throw new IllegalStateException("fencing.election.path is empty: set it to the election's path, like"
                    + " /elections/ledger-writer, or remove it");
        }
        try {
            LockPaths.requireNoOuterWhitespace("fencing.election.path", path);
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException(e.getMessage(), e);
        }
        try {
            // the lock service's own check of a lock path, which its elections apply too: making a lock handle
            // takes nothing from the service
            locks.lock(path);
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException(
                    "fencing.election.path '" + Text.withoutControls(path) + "' is not a lock path of the "
                            + locks.name() + " lock service: " + e.getMessage(),
                    e);
        }
        String id = election.getParticipantId();
        if (id == null) {
            id = env.getProperty("spring.application.name", "application") + "-"
                    + ManagementFactory.getRuntimeMXBean().getName();
        } else if (id.isBlank()) {
            throw new IllegalStateException(
                    "fencing.election.participant-id is empty: set it, or remove it for the default (application"
                            + " name and pid@host)");
        }
        return new FencedElectionParticipant(
                locks, path, id, election.getTokenSource(), events, election.isAutoStartup());
    }
}
