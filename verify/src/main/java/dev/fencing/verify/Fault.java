package dev.fencing.verify;

/**
 * One fault the nemesis injected, or tried to.
 *
 * @param kind what it was
 * @param target whom it hit: {@code writer 3}, {@code consumer 2}, {@code ZooKeeper server 1}
 * @param writer the writer it hit (for the timeline's lanes), or 0 when it hit no writer
 * @param start when it began, epoch ms
 * @param end when it was over (thawed, healed, restarted), epoch ms
 * @param counted whether it did what it is for: a pause or partition during which another writer took the lock
 *     over (so the session had expired), a backend that existed and was terminated, a leader replaced, a
 *     consumer killed and back, a member that joined and left
 * @param detail what happened, in words
 */
record Fault(FaultKind kind, String target, int writer, long start, long end, boolean counted, String detail) {}
