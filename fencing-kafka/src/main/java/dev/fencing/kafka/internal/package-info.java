/**
 * Implementation of {@code dev.fencing.kafka}. Not API: anything here may change or vanish in any release.
 */
package dev.fencing.kafka.internal;
