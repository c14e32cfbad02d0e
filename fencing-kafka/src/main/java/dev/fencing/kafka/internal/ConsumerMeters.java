package dev.fencing.kafka.internal;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The consumer's Micrometer meters, or nothing when the user gave no registry (never Micrometer's global
 * registry unasked). Counters are looked up once per topic and reason, not per record, because the registry's
 * lookup costs more than the increment. Used by the poll thread only.
 */
public final class ConsumerMeters {
    public static final String ACCEPTED = "fencing.kafka.records.accepted";
    public static final String DROPPED = "fencing.kafka.records.dropped";
    public static final String DEAD_LETTERED = "fencing.kafka.records.dead.lettered";
    public static final String HELD = "fencing.kafka.watermarks.held";

    private final MeterRegistry registry; // null: count nothing
    private final String groupId;
    private final Map<String, Counter> counters = new HashMap<>();

    public ConsumerMeters(MeterRegistry registry, String groupId, String clientId, Supplier<Number> held) {
        this.registry = registry;
        this.groupId = groupId;
        if (registry == null) {
            return;
        }
        Gauge.builder(HELD, held)
                .description("watermarks held in memory for the partitions this consumer owns")
                .tag("group", groupId)
                .tag("client", clientId)
                .register(registry);
    }

    public void accepted(String topic, long n) {
        increment(ACCEPTED, topic, null, n);
    }

    public void dropped(String topic, long n) {
        increment(DROPPED, topic, null, n);
    }

    public void deadLettered(String topic, String reason, long n) {
        increment(DEAD_LETTERED, topic, reason, n);
    }

    private void increment(String name, String topic, String reason, long n) {
        if (n == 0 || registry == null) {
            return;
        }
        String cacheKey = name + '\u0000' + topic + '\u0000' + reason;
        Counter counter = counters.computeIfAbsent(cacheKey, k -> {
            Counter.Builder builder =
                    Counter.builder(name).tag("group", groupId).tag("topic", topic);
            if (reason != null) {
                builder.tag("reason", reason);
            }
            return builder.register(registry);
        });
        counter.increment(n);
    }
}
