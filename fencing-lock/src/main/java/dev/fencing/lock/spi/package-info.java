/**
 * What lock backends share to implement {@code dev.fencing.lock}: not for applications. A backend's
 * leases use {@link dev.fencing.lock.spi.PauseDetector} to read invalid after this JVM was stopped.
 */
package dev.fencing.lock.spi;
