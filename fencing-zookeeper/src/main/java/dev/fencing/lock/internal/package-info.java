/**
 * Implementation of the lock client. Not API: anything here may change without notice; use {@code
 * dev.fencing.lock}.
 */
package dev.fencing.lock.internal;
