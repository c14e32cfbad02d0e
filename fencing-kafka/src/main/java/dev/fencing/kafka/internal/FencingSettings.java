package dev.fencing.kafka.internal;

import dev.fencing.FencePolicy;
import dev.fencing.kafka.FencedConsumerConfig;
import dev.fencing.kafka.StaleRecordPolicy;
import java.math.BigDecimal;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * The table of the consumer's {@code fencing.*} settings: each key's type, default, check and doc, in one
 * place. The keys and docs are {@link FencedConsumerConfig}'s public constants.
 */
public final class FencingSettings {
    private static final Map<String, FencingSetting<?>> BY_KEY = new LinkedHashMap<>();

    public static final FencingSetting<String> DEAD_LETTER_TOPIC = define(new FencingSetting<>(
            FencedConsumerConfig.DEAD_LETTER_TOPIC_CONFIG,
            "deadLetterTopic",
            FencedConsumerConfig.DEFAULT_DEAD_LETTER_TOPIC,
            (key, raw) -> String.valueOf(raw).trim(),
            topic -> topic.isEmpty() || topic.matches("[a-zA-Z0-9._-]{1,249}")
                    ? null
                    : "'" + topic + "' is not a legal Kafka topic name",
            FencedConsumerConfig.DEAD_LETTER_TOPIC_DOC));

    public static final FencingSetting<StaleRecordPolicy> STALE_RECORDS = define(new FencingSetting<>(
            FencedConsumerConfig.STALE_RECORDS_CONFIG,
            "staleRecords",
            StaleRecordPolicy.DEAD_LETTER,
            (key, raw) -> raw instanceof StaleRecordPolicy p ? p : StaleRecordPolicy.fromConfig(raw),
            p -> null,
            FencedConsumerConfig.STALE_RECORDS_DOC));

    public static final FencingSetting<FencePolicy> POLICY = define(new FencingSetting<>(
            FencedConsumerConfig.POLICY_CONFIG,
            "fencePolicy",
            FencePolicy.MONOTONIC,
            FencingSettings::policy,
            p -> null,
            FencedConsumerConfig.POLICY_DOC));

    public static final FencingSetting<Duration> POLL_TIMEOUT = define(millis(
            FencedConsumerConfig.POLL_TIMEOUT_MS_CONFIG,
            "pollTimeout",
            FencedConsumerConfig.DEFAULT_POLL_TIMEOUT_MS,
            FencedConsumerConfig.POLL_TIMEOUT_MS_DOC));

    public static final FencingSetting<Duration> CLOSE_TIMEOUT = define(millis(
            FencedConsumerConfig.CLOSE_TIMEOUT_MS_CONFIG,
            "closeTimeout",
            FencedConsumerConfig.DEFAULT_CLOSE_TIMEOUT_MS,
            FencedConsumerConfig.CLOSE_TIMEOUT_MS_DOC));

    public static final FencingSetting<Duration> DEAD_LETTER_TIMEOUT = define(millis(
            FencedConsumerConfig.DEAD_LETTER_TIMEOUT_MS_CONFIG,
            "deadLetterTimeout",
            FencedConsumerConfig.DEFAULT_DEAD_LETTER_TIMEOUT_MS,
            FencedConsumerConfig.DEAD_LETTER_TIMEOUT_MS_DOC));

    public static final FencingSetting<Integer> WATERMARK_CACHE_MAX_KEYS = define(new FencingSetting<>(
            FencedConsumerConfig.WATERMARK_CACHE_MAX_KEYS_CONFIG,
            "watermarkCacheMaxKeys",
            FencedConsumerConfig.DEFAULT_WATERMARK_CACHE_MAX_KEYS,
            FencingSettings::wholeInt,
            n -> n >= 1 ? null : "must be >= 1, got " + n,
            FencedConsumerConfig.WATERMARK_CACHE_MAX_KEYS_DOC));

    public static final FencingSetting<Long> COMMIT_MAX_RECORDS = define(new FencingSetting<>(
            FencedConsumerConfig.COMMIT_MAX_RECORDS_CONFIG,
            "commitMaxRecords",
            FencedConsumerConfig.DEFAULT_COMMIT_MAX_RECORDS,
            FencingSettings::whole,
            n -> n >= 0 ? null : "must be >= 0, got " + n,
            FencedConsumerConfig.COMMIT_MAX_RECORDS_DOC));

    public static final FencingSetting<Duration> COMMIT_INTERVAL = define(new FencingSetting<>(
            FencedConsumerConfig.COMMIT_INTERVAL_MS_CONFIG,
            "commitInterval",
            Duration.ofMillis(FencedConsumerConfig.DEFAULT_COMMIT_INTERVAL_MS),
            (k, raw) -> raw instanceof Duration d ? d : Duration.ofMillis(whole(k, raw)),
            d -> d.isNegative() ? "must be >= 0, got " + d : null, // 0: commit after every poll
            FencedConsumerConfig.COMMIT_INTERVAL_MS_DOC));

    public static final FencingSetting<Integer> MAX_CONCURRENCY = define(new FencingSetting<>(
            FencedConsumerConfig.MAX_CONCURRENCY_CONFIG,
            "maxConcurrency",
            FencedConsumerConfig.DEFAULT_MAX_CONCURRENCY,
            FencingSettings::wholeInt,
            n -> n >= 1 && n <= 4096 ? null : "must be from 1 to 4096, got " + n,
            FencedConsumerConfig.MAX_CONCURRENCY_DOC));

    public static final FencingSetting<Integer> MAX_IN_FLIGHT_PER_PARTITION = define(new FencingSetting<>(
            FencedConsumerConfig.MAX_IN_FLIGHT_PER_PARTITION_CONFIG,
            "maxInFlightPerPartition",
            FencedConsumerConfig.DEFAULT_MAX_IN_FLIGHT_PER_PARTITION,
            FencingSettings::wholeInt,
            n -> n >= 1 && n <= 1_000_000 ? null : "must be from 1 to 1000000, got " + n,
            FencedConsumerConfig.MAX_IN_FLIGHT_PER_PARTITION_DOC));

    public static final FencingSetting<Integer> GROUP_MAX_RECORDS = define(new FencingSetting<>(
            FencedConsumerConfig.GROUP_MAX_RECORDS_CONFIG,
            "groupMaxRecords",
            FencedConsumerConfig.DEFAULT_GROUP_MAX_RECORDS,
            FencingSettings::wholeInt,
            n -> n >= 1 && n <= 10_000 ? null : "must be from 1 to 10000, got " + n,
            FencedConsumerConfig.GROUP_MAX_RECORDS_DOC));

    public static final FencingSetting<Duration> GROUP_MAX_TIME = define(millis(
            FencedConsumerConfig.GROUP_MAX_MS_CONFIG,
            "groupMaxTime",
            FencedConsumerConfig.DEFAULT_GROUP_MAX_MS,
            FencedConsumerConfig.GROUP_MAX_MS_DOC));

    public static final FencingSetting<Duration> RETRY_BACKOFF = define(millis(
            FencedConsumerConfig.RETRY_BACKOFF_MS_CONFIG,
            "retryBackoff",
            FencedConsumerConfig.DEFAULT_RETRY_BACKOFF_MS,
            FencedConsumerConfig.RETRY_BACKOFF_MS_DOC));

    public static final FencingSetting<Duration> RETRY_BACKOFF_MAX = define(millis(
            FencedConsumerConfig.RETRY_BACKOFF_MAX_MS_CONFIG,
            "retryBackoff",
            FencedConsumerConfig.DEFAULT_RETRY_BACKOFF_MAX_MS,
            FencedConsumerConfig.RETRY_BACKOFF_MAX_MS_DOC));

    public static final FencingSetting<Duration> RETRY_MAX_TIME = define(new FencingSetting<>(
            FencedConsumerConfig.RETRY_MAX_MS_CONFIG,
            "retryMaxTime",
            Duration.ofMillis(FencedConsumerConfig.DEFAULT_RETRY_MAX_MS),
            (k, raw) -> raw instanceof Duration d ? d : Duration.ofMillis(whole(k, raw)),
            d -> d.isNegative() ? "must be >= 0, got " + d : null, // 0: nothing is retried
            FencedConsumerConfig.RETRY_MAX_MS_DOC));

    private FencingSettings() {}

    /** The setting of a key, or null. */
    public static FencingSetting<?> byKey(String key) {
        return BY_KEY.get(key);
    }

    public static Set<String> keys() {
        return BY_KEY.keySet();
    }

    /** A {@code true}/{@code false} property, as a boolean or its text. */
    public static boolean bool(String key, Object raw) {
        if (raw instanceof Boolean b) {
            return b;
        }
        String text = String.valueOf(raw).trim().toLowerCase(Locale.ROOT);
        if (text.equals("true") || text.equals("false")) {
            return Boolean.parseBoolean(text);
        }
        throw new IllegalArgumentException(key + " must be true or false, got '" + raw + "'");
    }

    private static <T> FencingSetting<T> define(FencingSetting<T> setting) {
        BY_KEY.put(setting.key(), setting);
        return setting;
    }

    private static FencingSetting<Duration> millis(String key, String method, long defaultMillis, String doc) {
        Function<Duration, String> positive = d -> d.isNegative() || d.isZero() ? "must be positive, got " + d : null;
        return new FencingSetting<>(
                key,
                method,
                Duration.ofMillis(defaultMillis),
                (k, raw) -> raw instanceof Duration d ? d : Duration.ofMillis(whole(k, raw)),
                positive,
                doc);
    }

    private static int wholeInt(String key, Object raw) {
        long n = whole(key, raw);
        if (n < Integer.MIN_VALUE || n > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(key + " must be a whole number from " + Integer.MIN_VALUE + " to "
                    + Integer.MAX_VALUE + ", got '" + raw + "'");
        }
        return (int) n;
    }

    /**
     * A whole number, as a number or its text. A number of another type than {@code Long}, {@code Integer},
     * {@code Short} or {@code Byte} is taken only if its value is a whole number a {@code long} holds: cut to one
     * ({@code longValue()}), 0.5 records would be 0 (no limit by count) and 2^64 + 2 would be 2.
     */
    private static long whole(String key, Object raw) {
        if (raw instanceof Long || raw instanceof Integer || raw instanceof Short || raw instanceof Byte) {
            return ((Number) raw).longValue();
        }
        if (raw instanceof Number n) {
            try {
                return new BigDecimal(n.toString()).longValueExact();
            } catch (NumberFormatException | ArithmeticException e) {
                throw new IllegalArgumentException(key + " must be a whole number, got '" + raw + "'", e);
            }
        }
        try {
            return Long.parseLong(String.valueOf(raw).trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(key + " must be a whole number, got '" + raw + "'", e);
        }
    }

    private static FencePolicy policy(String key, Object raw) {
        if (raw instanceof FencePolicy p) {
            return p;
        }
        String text = String.valueOf(raw).trim();
        for (FencePolicy p : FencePolicy.values()) {
            if (p.name().equalsIgnoreCase(text)) {
                return p;
            }
        }
        throw new IllegalArgumentException(key + " must be strict or monotonic, got '" + raw + "'");
    }
}
