package dev.fencing.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fencing.kafka.FencedRecords;
import dev.fencing.kafka.RecordHandler;
import dev.fencing.spring.internal.DeclaredConsumers;
import dev.fencing.testsupport.KafkaEndpoint;
import dev.fencing.testsupport.KafkaServers;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.support.DefaultListableBeanFactory;

/**
 * A key-parallel consumer whose handler of key B fails while the handler of key A ignores its interrupt and runs
 * on: the consumer fails, and a restart is refused while A's handler still runs (it would hand A's record to a
 * second handler at once); once that handler has returned, the restart runs A's record again, never two at once.
 */
class DeclaredConsumerRestartIT {
    @Test
    void restartWaitsForTheFailedRunsHandlers() throws Exception {
        KafkaEndpoint kafka = KafkaServers.shared();
        String topic = "review-fix-" + System.nanoTime();
        kafka.createTopic(topic, 1);
        kafka.createTopic(topic + ".dlt", 1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicInteger aRunning = new AtomicInteger();
        AtomicInteger aMax = new AtomicInteger();
        AtomicInteger aInvocations = new AtomicInteger();
        AtomicInteger bInvocations = new AtomicInteger();
        RecordHandler<Object, Object> handler = (record, token) -> {
            if ("A".equals(record.key())) {
                aMax.accumulateAndGet(aRunning.incrementAndGet(), Math::max);
                try {
                    if (aInvocations.incrementAndGet() == 1) {
                        while (release.getCount() > 0) {
                            try {
                                release.await(100, TimeUnit.MILLISECONDS);
                            } catch (InterruptedException ignored) {
                            }
                        }
                    }
                } finally {
                    aRunning.decrementAndGet();
                }
            } else if (bInvocations.incrementAndGet() == 1) {
                throw new IllegalStateException("B fails once");
            }
        };
        DefaultListableBeanFactory beans = new DefaultListableBeanFactory();
        beans.registerSingleton("handler", handler);
        FencingProperties.Kafka props = new FencingProperties.Kafka();
        props.setProperties(Map.of("bootstrap.servers", kafka.bootstrapServers()));
        FencingProperties.Consumer c = new FencingProperties.Consumer();
        c.setTopics(List.of(topic));
        c.setHandler("handler");
        c.setWatermarkStore(FencingProperties.WatermarkStoreType.IN_MEMORY);
        c.setProperties(Map.of("fencing.max.concurrency", "2", "fencing.close.timeout.ms", "2000"));
        props.setConsumers(Map.of("c", c));
        DeclaredConsumers consumers = new DeclaredConsumers(props, beans, () -> null, List.of());
        try (Producer<String, String> producer = new KafkaProducer<>(
                Map.of("bootstrap.servers", kafka.bootstrapServers()),
                new StringSerializer(),
                new StringSerializer())) {
            producer.send(FencedRecords.create(topic, "A", "a", 1)).get();
            producer.send(FencedRecords.create(topic, "B", "b", 1)).get();
        }
        consumers.start();
        try {
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> consumers.states().get("c").startsWith("failed"));
            // refused while the failed loop shuts down, and then while A's handler still runs
            assertThatThrownBy(() -> consumers.restart("c")).isInstanceOf(IllegalStateException.class);
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> refusal(consumers, "c").contains("handlers of the failed run still run"));
            assertThat(aRunning.get()).isEqualTo(1);
            assertThat(consumers.states().get("c")).startsWith("failed");
            release.countDown();
            // the pool's worker thread ends a moment after its task has returned
            await().atMost(Duration.ofSeconds(10)).until(() -> restarted(consumers, "c"));
            await().atMost(Duration.ofSeconds(60)).until(() -> aInvocations.get() == 2 && bInvocations.get() == 2);
            assertThat(aMax.get()).isEqualTo(1);
        } finally {
            release.countDown();
            consumers.stop();
        }
    }

    private static String refusal(DeclaredConsumers consumers, String name) {
        try {
            consumers.restart(name);
            return "restarted";
        } catch (IllegalStateException refused) {
            return refused.getMessage();
        }
    }

    private static boolean restarted(DeclaredConsumers consumers, String name) {
        try {
            consumers.restart(name);
            return true;
        } catch (IllegalStateException handlersStillRun) {
            return false;
        }
    }
}
