package dev.fencing.spring.internal;

/** Hears of every call of a {@code @FencedLocked(skipIfLocked = true)} method that did not run. */
@FunctionalInterface
public interface SkippedCalls {

    /** {@code method} is the declaring class's name and the method's; {@code lockPath} the evaluated path. */
    void skipped(String method, String lockPath);
}
