package dev.fencing.spring;

import dev.fencing.redis.FencedRedis;

/**
 * Adjusts the auto-configured {@link FencedRedis} before it is built, after the {@code fencing.redis.*}
 * properties were applied: for example {@code builder.maxValueBytes(1 << 20)}. Declare it as a bean. The
 * builder checks every value and throws {@code IllegalArgumentException} for a bad one, which fails the
 * application's start.
 *
 * <pre>{@code
 * @Bean
 * FencedRedisCustomizer smallValues() {
 *     return builder -> builder.maxValueBytes(64 * 1024);
 * }
 * }</pre>
 */
@FunctionalInterface
public interface FencedRedisCustomizer {
    void customize(FencedRedis.Builder builder);
}
