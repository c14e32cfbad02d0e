/**
 * Spring Boot support for the fencing toolkit: {@link dev.fencing.spring.FencedLocked} methods, the {@code
 * fencing.*} properties ({@link dev.fencing.spring.FencingProperties}) and customizers of the
 * auto-configured locks, writer, consumers and {@code FencedRedis}. The auto-configuration itself is in
 * {@code dev.fencing.spring.autoconfigure}.
 */
package dev.fencing.spring;
