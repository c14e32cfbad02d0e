/**
 * The starter's implementation: not API. Classes here may change or go away in any release; use the
 * auto-configuration, the properties and the types of {@code dev.fencing.spring}.
 */
package dev.fencing.spring.internal;
