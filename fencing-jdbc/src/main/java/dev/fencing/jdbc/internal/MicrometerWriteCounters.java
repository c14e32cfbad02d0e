package dev.fencing.jdbc.internal;

import dev.fencing.jdbc.WriteOutcome;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** Counts {@code fencing.jdbc.writes} by table and outcome. */
public final class MicrometerWriteCounters implements WriteCounters {
    public static final String METER = "fencing.jdbc.writes";

    private final MeterRegistry registry;
    private final Map<List<String>, Counter> counters = new ConcurrentHashMap<>();

    private MicrometerWriteCounters(MeterRegistry registry) {
        this.registry = registry;
    }

    public static WriteCounters create(MeterRegistry registry) {
        return new MicrometerWriteCounters(registry);
    }

    @Override
    public void record(String table, WriteOutcome outcome) {
        record(table, outcome, 1);
    }

    @Override
    public void record(String table, WriteOutcome outcome, long count) {
        String tag = WriteCounters.tag(outcome);
        counters.computeIfAbsent(List.of(table, tag), k -> Counter.builder(METER)
                        .description("fenced writes by outcome")
                        .tag("table", table)
                        .tag("outcome", tag)
                        .register(registry))
                .increment(count);
    }
}
