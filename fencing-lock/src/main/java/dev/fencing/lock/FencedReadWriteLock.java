package dev.fencing.lock;

/**
 * A distributed read/write lock: many readers or one writer; a writer waits for every reader and writer
 * before it, a reader for the writers before it, so a waiting writer holds back readers that come after
 * it. Every grant carries a fence token. With ZooKeeper it is Curator's {@code InterProcessReadWriteLock}
 * recipe (its {@code __READ__} and {@code __WRIT__} nodes, its order and its predicates).
 *
 * <p>The token rules, for one path (and one token source, where a backend offers several):
 *
 * <ul>
 *   <li><b>Write tokens</b> are strictly greater than the token of every earlier write grant and every
 *       earlier read grant, across holders, sessions and (with the same protection as {@link FencedLock})
 *       deletions of the parent. A resource stores the newest write token it accepted and refuses
 *       writes under older ones, exactly as with {@link FencedLock}: a paused ex-writer's late write is
 *       refused once a later writer has written.
 *   <li><b>Read tokens</b> come from the same counter: a read token is at least the token of every write
 *       granted before the read (equal only for a downgrade, below), and less than that of every write
 *       granted after it. Readers share
 *       the lock, so several valid read tokens exist at once. Never write under a read token: a resource
 *       cannot tell a read token from a write token (both are longs from one counter), so a fenced write under
 *       a read token above the stored one is accepted; that is the caller's to prevent. What a read token is
 *       good for is checking a read afterwards, with the resource's stored token read with the data and read
 *       again once the read is done: the read may be stale if the second stored token is greater than the read
 *       token (a writer granted after the read has written) <em>or differs from the first</em> (a paused
 *       ex-writer, granted before the read, wrote late: its token is below the read token, and the resource
 *       accepts it while no later writer has written). {@code verify --resource rwlock} checks readers that
 *       do both; with the first test alone its fenced run returned stale reads.
 *   <li><b>Re-entry</b> (a thread acquiring a lock it holds, read or write) returns a lease with the same
 *       token, as {@link FencedLock} does.
 *   <li><b>Downgrade</b> (a thread holding the write lock acquires the read lock, then releases the write
 *       lock) works as in Curator 5.9: the read grant is immediate, it takes the write grant's place in
 *       the order (so writers queued behind the writer also wait for the reader), and its token is the
 *       write grant's. A thread whose write lease is no longer valid, or whose write claim is gone even if
 *       the lease does not know it yet, cannot downgrade: {@link LeaseLostException} (with ZooKeeper, the
 *       read node is created in one transaction with a check that the write node exists).
 *   <li><b>Upgrade</b> (a thread holding the read lock, its own or one downgraded from a write it has
 *       released, acquires the write lock) is refused at once with {@link IllegalStateException}, from
 *       {@code acquire()} and {@code tryAcquire} alike. Curator cannot upgrade: the write node would queue
 *       behind the thread's own read node and wait for it, until the timeout or for ever. Release the read
 *       lock (every lease of it) first, then acquire the write lock; what was read under the read lease may
 *       have changed in between, so read it again under the write lease.
 * </ul>
 *
 * <p>Both locks follow {@link FencedLock}'s lease rules: a lease is invalidated on a lost connection, an
 * ended session or lease, a detected pause of this JVM, or when the lock factory closes, and belongs to
 * the thread that acquired it. A path is either a read/write lock's or an exclusive lock's (or
 * election's): with ZooKeeper, a grant that finds the other recipe's nodes under its path fails with
 * {@code ForeignLockParentException}, since the two order their nodes differently and could both grant
 * at once. Only this library's clients check that: a plain Curator lock or leader recipe pointed at a
 * read/write lock's path would grant beside its readers. Thread-safe; a cheap handle, as {@link
 * FencedLock}.
 *
 * <pre>{@code
 * FencedReadWriteLock prices = locks.readWriteLock("/locks/price-list");
 * try (Lease read = prices.readLock().acquire()) {
 *     report = priceList.read();                                  // many readers at once
 * }
 * try (Lease write = prices.writeLock().acquire()) {
 *     priceList.replace(newPrices, write.token());                // fenced like an exclusive lock
 * }
 * }</pre>
 */
public interface FencedReadWriteLock {

    /** The lock path (with ZooKeeper, the read and write lock nodes are its children). */
    String path();

    /** The shared lock: held by any number of threads and processes while no writer holds or waits before them. */
    FencedLock readLock();

    /** The exclusive lock: held by one thread, while no reader holds. */
    FencedLock writeLock();
}
