package com.example.jobs;

import dev.fencing.lock.zookeeper.FencedLocks;
import dev.fencing.spring.FencedLockRegistry;
import dev.fencing.spring.TermEndedEvent;
import dev.fencing.spring.TermStartedEvent;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import net.javacrumbs.shedlock.spring.annotation.EnableSchedulerLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.ApplicationEvent;
import org.springframework.context.annotation.Bean;
import org.springframework.context.event.EventListener;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.stereotype.Component;

/**
 * A service with scheduled jobs on several instances: one under {@code @FencedLocked(skipIfLocked = true)},
 * one under ShedLock's {@code @SchedulerLock} with the starter's {@code FencedLockProvider}; it also takes part
 * in the election named by {@code fencing.election.path}.
 */
@SpringBootApplication
@EnableScheduling
@EnableSchedulerLock(defaultLockAtMostFor = "PT1M")
public class JobsApplication {

    public static void main(String[] args) {
        SpringApplication.run(JobsApplication.class, args);
    }

    /** Spring Integration's lock abstraction on the same ZooKeeper locks. */
    @Bean
    FencedLockRegistry lockRegistry(FencedLocks locks) {
        return new FencedLockRegistry(locks, "/locks/orders");
    }

    /** The election events this instance published, in order. */
    @Component
    public static class Terms {
        private static final Logger LOG = LoggerFactory.getLogger(Terms.class);

        public final List<ApplicationEvent> events = new CopyOnWriteArrayList<>();

        @EventListener
        void started(TermStartedEvent event) {
            LOG.info("leading {} with term token {}", event.leadership().path(), event.token());
            events.add(event);
        }

        @EventListener
        void ended(TermEndedEvent event) {
            LOG.info("term {} ended: {}", event.token(), event.cause());
            events.add(event);
        }
    }
}
