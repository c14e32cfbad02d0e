package dev.fencing.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencing.lock.LeaseLoss;
import dev.fencing.lock.zookeeper.FencedLocks;
import dev.fencing.testsupport.ZooKeeperServers;
import dev.fencing.testsupport.ZooKeeperSessions;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.ZooKeeper;
import org.junit.jupiter.api.Test;
import org.springframework.context.ApplicationEventPublisher;

/**
 * {@link FencedElectionParticipant} on the shared real ZooKeeper, without an application context: a term whose
 * start listener throws ends (stepped down, its ended event published), and the participant joins again and
 * leads with a greater token.
 */
class FencedElectionParticipantIT {

    @Test
    void aStartListenerThatThrowsEndsTheTermAndTheParticipantJoinsAgainWithAGreaterToken() {
        CuratorFramework client =
                CuratorFrameworkFactory.newClient(ZooKeeperServers.shared().connectString(), new RetryOneTime(100));
        client.start();
        List<Object> events = new CopyOnWriteArrayList<>();
        AtomicInteger starts = new AtomicInteger();
        ApplicationEventPublisher publisher = event -> {
            events.add(event);
            if (event instanceof TermStartedEvent && starts.getAndIncrement() == 0) {
                throw new IllegalStateException("the first start listener fails");
            }
        };
        try (FencedLocks locks = FencedLocks.builder(client).build()) {
            FencedElectionParticipant participant =
                    new FencedElectionParticipant(locks, "/elections/participant-it", "p1", null, publisher, true);
            participant.start();
            try {
                await().atMost(Duration.ofSeconds(30)).until(() -> events.size() >= 3);
                TermStartedEvent first = (TermStartedEvent) events.get(0);
                assertThat(events.get(1)).isInstanceOfSatisfying(TermEndedEvent.class, e -> {
                    assertThat(e.token()).isEqualTo(first.token());
                    assertThat(e.cause()).isEqualTo(LeaseLoss.STEPPED_DOWN);
                });
                assertThat(events.get(2)).isInstanceOfSatisfying(TermStartedEvent.class, e -> assertThat(e.token())
                        .isGreaterThan(first.token()));
                await().atMost(Duration.ofSeconds(10)).until(participant::isLeader);
            } finally {
                participant.stop();
            }
            assertThat(participant.isLeader()).isFalse();
            assertThat(events.get(events.size() - 1))
                    .isInstanceOfSatisfying(
                            TermEndedEvent.class, e -> assertThat(e.cause()).isEqualTo(LeaseLoss.STEPPED_DOWN));
        } finally {
            client.close();
        }
    }

    /**
     * A start listener that swallows the interrupt with which the term's end stops the participant's thread
     * (as a listener that sleeps and catches InterruptedException does): the term still ends, its ended event
     * is published, and the participant joins again and leads with a greater token.
     */
    @Test
    void aStartListenerThatSwallowsTheTermsInterruptDoesNotKeepTheTermServedForever() throws Exception {
        String connect = ZooKeeperServers.shared().connectString();
        CuratorFramework client = CuratorFrameworkFactory.newClient(connect, new RetryOneTime(100));
        client.start();
        List<Object> events = new CopyOnWriteArrayList<>();
        AtomicInteger starts = new AtomicInteger();
        ApplicationEventPublisher publisher = event -> {
            events.add(event);
            if (event instanceof TermStartedEvent started && starts.getAndIncrement() == 0) {
                while (started.leadership().isValid()) {
                    try {
                        Thread.sleep(20);
                    } catch (InterruptedException swallowed) {
                        // the listener's own business: the flag is gone
                    }
                }
            }
        };
        try (FencedLocks locks = FencedLocks.builder(client).build()) {
            FencedElectionParticipant participant =
                    new FencedElectionParticipant(locks, "/elections/swallowed-it", "p1", null, publisher, true);
            participant.start();
            try {
                await().atMost(Duration.ofSeconds(30)).until(() -> !events.isEmpty());
                ZooKeeper handle = client.getZookeeperClient().getZooKeeper();
                ZooKeeperSessions.expire(connect, handle.getSessionId(), handle.getSessionPasswd());

                await().atMost(Duration.ofSeconds(30)).until(() -> events.size() >= 3);
                TermStartedEvent first = (TermStartedEvent) events.get(0);
                assertThat(events.get(1)).isInstanceOfSatisfying(TermEndedEvent.class, e -> assertThat(e.token())
                        .isEqualTo(first.token()));
                assertThat(events.get(2)).isInstanceOfSatisfying(TermStartedEvent.class, e -> assertThat(e.token())
                        .isGreaterThan(first.token()));
            } finally {
                participant.stop();
            }
        } finally {
            client.close();
        }
    }
}
