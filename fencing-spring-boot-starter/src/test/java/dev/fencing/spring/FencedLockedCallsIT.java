package dev.fencing.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.fencing.lock.Lease;
import dev.fencing.lock.LeaseLostException;
import dev.fencing.spring.autoconfigure.FencingJdbcAutoConfiguration;
import dev.fencing.spring.autoconfigure.FencingLockedMethodsAutoConfiguration;
import dev.fencing.spring.autoconfigure.FencingZooKeeperAutoConfiguration;
import dev.fencing.spring.internal.FencedLockedInterceptor;
import dev.fencing.spring.internal.FencedLockedInterceptor.HeldLease;
import dev.fencing.spring.internal.OneAttempt;
import dev.fencing.testsupport.PostgresEndpoint;
import dev.fencing.testsupport.PostgresServers;
import dev.fencing.testsupport.ZooKeeperServers;
import dev.fencing.testsupport.ZooKeeperSessions;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.ZooKeeper;
import org.awaitility.Awaitility;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.annotation.EnableTransactionManagement;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * {@code @FencedLocked} methods called the ways a Spring application calls them, on the shared real ZooKeeper and
 * PostgreSQL: from inside a transaction that is already running (the caller's {@code @Transactional}, a
 * {@code TransactionTemplate}, an enclosing locked {@code @Transactional} method of another lock), and declared on an
 * interface.
 */
class FencedLockedCallsIT {
    private static PostgresEndpoint db;

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    FencingZooKeeperAutoConfiguration.class,
                    FencingLockedMethodsAutoConfiguration.class,
                    FencingJdbcAutoConfiguration.class))
            .withPropertyValues("fencing.zookeeper.connect-string="
                    + ZooKeeperServers.shared().connectString())
            .withUserConfiguration(Service.class);

    @BeforeAll
    static void start() {
        db = PostgresServers.shared().createDatabase("locked_calls_it");
        Jdbi.create(db.dataSource())
                .useHandle(h -> h.execute("CREATE TABLE counter (name text PRIMARY KEY, n int NOT NULL)"));
    }

    @AfterAll
    static void stop() {
        if (db != null) {
            db.close();
        }
    }

    /**
     * The caller's transaction is running when the locked method is called: what the method wrote under its lock
     * commits only when that transaction does. While it has not, the lock must not be free: a next holder granted
     * then reads the state from before the write (PostgreSQL shows it no uncommitted row), and its write, computed
     * from that, lands once the first commits, with a greater token, so the fence has nothing to refuse: a lost
     * update under the lock.
     */
    @Test
    void aLockTakenInsideARunningTransactionIsHeldUntilThatTransactionCommits() {
        runner.run(context -> {
            Counter counter = context.getBean(Counter.class);
            LockService locks = context.getBean(LockService.class);
            Jdbi jdbi = Jdbi.create(db.dataSource());
            jdbi.useHandle(h -> h.execute("INSERT INTO counter VALUES ('in-tx', 0)"));
            TransactionTemplate tx = new TransactionTemplate(context.getBean(PlatformTransactionManager.class));

            long[] token = new long[1];
            tx.executeWithoutResult(status -> {
                token[0] = counter.increment("in-tx", 0); // writes n = 1 under the lock, uncommitted
                // the caller's transaction has not committed: another holder must not have the lock yet
                Optional<Lease> other = otherThreadTries(locks, "/locks/calls-it/in-tx");
                other.ifPresent(Lease::close);
                assertThat(other)
                        .as(
                                "the lock was free while the write made under token %s was uncommitted; a holder"
                                        + " granted now reads n = %s",
                                token[0], readOnOtherConnection(jdbi))
                        .isEmpty();
            });
            // committed: now the next holder gets it, with a greater token
            Optional<Lease> next = otherThreadTries(locks, "/locks/calls-it/in-tx");
            assertThat(next).isPresent();
            next.get().close();
        });
    }

    /** The same through an enclosing {@code @FencedLocked @Transactional} method of another lock. */
    @Test
    void anInnerLockOfAnotherPathIsHeldUntilTheOuterLockedMethodsTransactionCommits() {
        runner.run(context -> {
            Outer outer = context.getBean(Outer.class);
            LockService locks = context.getBean(LockService.class);
            Jdbi.create(db.dataSource()).useHandle(h -> h.execute("INSERT INTO counter VALUES ('inner', 0)"));

            Optional<Lease> duringOuter =
                    outer.run("outer", "inner", () -> otherThreadTries(locks, "/locks/calls-it/inner"));
            duringOuter.ifPresent(Lease::close);
            assertThat(duringOuter)
                    .as("the inner lock was free before the outer method's transaction committed its write")
                    .isEmpty();
        });
    }

    /**
     * {@code @FencedLocked} and {@code @FenceToken} declared on an interface, as Spring users declare
     * {@code @Transactional} and {@code @RequestParam}: the lock is taken (the annotation is found on the interface),
     * so the token parameter must be filled in too, and a caller's own token refused.
     */
    @Test
    void aTokenParameterDeclaredOnTheInterfaceGetsTheGrantsTokenAndACallersTokenIsRefused() {
        runner.run(context -> {
            TokenEcho echo = context.getBean(TokenEcho.class);
            long[] received = {-1};
            Throwable refused = catchThrowable(() -> received[0] = echo.echo(7));
            assertThat(refused)
                    .as(
                            "a caller's own token (an earlier lease's, another lock's) must be refused; the method ran"
                                    + " under the lock with token %s",
                            received[0])
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("pass 0 for its @FenceToken parameter");
            assertThat(echo.echo(0)).as("the token the method got").isPositive();
        });
    }

    /**
     * A locked {@code @Transactional} method whose lease is known lost (its session expired) before it returns: its
     * transaction commits regardless. The next holder, granted after the expiry, read the row without the
     * uncommitted write and has its own write, computed from that, land after this commit with a greater token: the
     * first increment is lost, and no fence refused anything. A commit made when the lease is known lost must not
     * happen (beforeCommit can still refuse it).
     */
    @Test
    void aTransactionOfALockedMethodWhoseLeaseIsKnownLostDoesNotCommit() {
        runner.run(context -> {
            Outer outer = context.getBean(Outer.class);
            FencedLockedInterceptor interceptor = context.getBean(FencedLockedInterceptor.class);
            CuratorFramework client = context.getBean(CuratorFramework.class);
            Jdbi jdbi = Jdbi.create(db.dataSource());
            jdbi.useHandle(h -> h.execute("INSERT INTO counter VALUES ('lost', 0)"));
            CountDownLatch written = new CountDownLatch(1);
            CountDownLatch lost = new CountDownLatch(1);

            CompletableFuture<Object> call = new CompletableFuture<>();
            Thread holder = new Thread(() -> {
                try {
                    call.complete(outer.incrementThen(
                            "lost",
                            () -> {
                                written.countDown();
                                await(lost);
                            },
                            0));
                } catch (Throwable e) {
                    call.complete(e);
                }
            });
            holder.start();
            await(written);
            HeldLease lease = interceptor.heldLeases().stream()
                    .filter(l -> l.path().equals("/locks/calls-it/lost"))
                    .findFirst()
                    .orElseThrow();
            ZooKeeper session = client.getZookeeperClient().getZooKeeper();
            ZooKeeperSessions.expire(
                    ZooKeeperServers.shared().connectString(), session.getSessionId(), session.getSessionPasswd());
            Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> !lease.valid());
            lost.countDown();

            Object result = call.get(30, TimeUnit.SECONDS);
            int n = jdbi.withHandle(h -> h.createQuery("SELECT n FROM counter WHERE name = 'lost'")
                    .mapTo(Integer.class)
                    .one());
            assertThat(n)
                    .as("committed after the lease (token %s) was known lost; the call gave %s", lease.token(), result)
                    .isZero();
            assertThat(result).as("what the call gave").isInstanceOf(LeaseLostException.class);
        });
    }

    /**
     * The same for a lock taken inside a transaction that was already running: it is held until that transaction
     * completes, and that transaction must not commit what the method wrote once the lease is known lost.
     */
    @Test
    void aRunningTransactionInWhichALockedMethodWroteDoesNotCommitOnceItsLeaseIsKnownLost() {
        runner.run(context -> {
            Counter counter = context.getBean(Counter.class);
            CuratorFramework client = context.getBean(CuratorFramework.class);
            Jdbi jdbi = Jdbi.create(db.dataSource());
            jdbi.useHandle(h -> h.execute("INSERT INTO counter VALUES ('lost-in-tx', 0)"));
            TransactionTemplate tx = new TransactionTemplate(context.getBean(PlatformTransactionManager.class));
            long[] token = new long[1];

            Throwable committed = catchThrowable(() -> tx.executeWithoutResult(status -> {
                Lease[] lease = new Lease[1];
                token[0] = counter.incrementWithLease("lost-in-tx", held -> lease[0] = held);
                expireSession(client);
                Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> !lease[0].isValid());
            }));

            int n = jdbi.withHandle(h -> h.createQuery("SELECT n FROM counter WHERE name = 'lost-in-tx'")
                    .mapTo(Integer.class)
                    .one());
            assertThat(n)
                    .as("committed after the lease (token %s) was known lost; the commit gave %s", token[0], committed)
                    .isZero();
            assertThat(committed).isInstanceOf(LeaseLostException.class);
        });
    }

    /**
     * The same for a transaction begun while the thread holds a {@link FencedLockRegistry} lock: once its lease is
     * known lost, the transaction does not commit what it wrote under the lock.
     */
    @Test
    void aTransactionBegunUnderARegistryLockDoesNotCommitOnceItsLeaseIsKnownLost() {
        runner.run(context -> {
            FencedLockRegistry registry =
                    new FencedLockRegistry(context.getBean(LockService.class), "/locks/calls-it-registry");
            CuratorFramework client = context.getBean(CuratorFramework.class);
            Jdbi jdbi = Jdbi.create(db.dataSource());
            jdbi.useHandle(h -> h.execute("INSERT INTO counter VALUES ('registry-lost', 0)"));
            JdbcTemplate sql = new JdbcTemplate(context.getBean(DataSource.class));
            TransactionTemplate tx = new TransactionTemplate(context.getBean(PlatformTransactionManager.class));

            FencedLockRegistry.KeyLock lock = registry.obtain("counter");
            lock.lock();
            Lease lease = lock.lease();
            assertThat(CurrentLease.get())
                    .as("a Lock's holder reads its token from the lock")
                    .isEmpty();
            Throwable committed;
            try {
                committed = catchThrowable(() -> tx.executeWithoutResult(status -> {
                    sql.update("UPDATE counter SET n = n + 1 WHERE name = 'registry-lost'");
                    expireSession(client);
                    Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> !lease.isValid());
                }));
            } finally {
                lock.unlock();
            }

            int n = jdbi.withHandle(h -> h.createQuery("SELECT n FROM counter WHERE name = 'registry-lost'")
                    .mapTo(Integer.class)
                    .one());
            assertThat(n)
                    .as(
                            "committed after the lease (token %s) was known lost; the commit gave %s",
                            lease.token(), committed)
                    .isZero();
            assertThat(committed).isInstanceOf(LeaseLostException.class);
        });
    }

    private static void expireSession(CuratorFramework client) {
        try {
            ZooKeeper session = client.getZookeeperClient().getZooKeeper();
            ZooKeeperSessions.expire(
                    ZooKeeperServers.shared().connectString(), session.getSessionId(), session.getSessionPasswd());
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static void await(CountDownLatch latch) {
        try {
            if (!latch.await(30, TimeUnit.SECONDS)) {
                throw new AssertionError("latch never opened");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    private static Optional<Lease> otherThreadTries(LockService locks, String path) {
        CompletableFuture<Optional<Lease>> tried = new CompletableFuture<>();
        Thread other = new Thread(() -> {
            try {
                Optional<Lease> got = locks.lock(path).tryAcquire(OneAttempt.WAIT);
                got.ifPresent(Lease::close); // released by the thread that took it; the token stays readable
                tried.complete(got);
            } catch (Throwable e) {
                tried.completeExceptionally(e);
            }
        });
        other.start();
        try {
            return tried.get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    private static int readOnOtherConnection(Jdbi jdbi) {
        return jdbi.withHandle(h -> h.createQuery("SELECT n FROM counter WHERE name = 'in-tx'")
                .mapTo(Integer.class)
                .one());
    }

    public interface TokenEcho {
        @FencedLocked("/locks/calls-it/echo")
        long echo(@FenceToken long token);
    }

    public static class EchoingImpl implements TokenEcho {
        @Override
        public long echo(long token) {
            return token;
        }
    }

    @Configuration(proxyBeanMethods = false)
    @EnableTransactionManagement
    static class Service {
        @Bean
        DataSource dataSource() {
            return db.dataSource();
        }

        @Bean
        PlatformTransactionManager transactionManager(DataSource dataSource) {
            return new DataSourceTransactionManager(dataSource);
        }

        @Bean
        Counter counter(Jdbi jdbi) {
            return new Counter(jdbi);
        }

        @Bean
        Outer outer(Counter counter) {
            return new Outer(counter);
        }

        @Bean
        TokenEcho echo() {
            return new EchoingImpl();
        }
    }

    /** Read-modify-write under the counter's lock, on the transaction's connection. */
    public static class Counter {
        private final Jdbi jdbi;

        Counter(Jdbi jdbi) {
            this.jdbi = jdbi; // the starter's: on the connection of the transaction running on the thread
        }

        /** {@link #increment}, handing its lease to {@code seen} before it returns. */
        @FencedLocked("/locks/calls-it/#{#name}")
        public long incrementWithLease(String name, Consumer<Lease> seen) {
            long token = increment(name, 0); // re-entrant: the same lease
            seen.accept(CurrentLease.get().orElseThrow());
            return token;
        }

        @FencedLocked("/locks/calls-it/#{#name}")
        public long increment(String name, @FenceToken long token) {
            add(name);
            return token;
        }

        /** The increment itself, under no lock of its own. */
        void add(String name) {
            jdbi.useHandle(h -> {
                int n = h.createQuery("SELECT n FROM counter WHERE name = ?")
                        .bind(0, name)
                        .mapTo(Integer.class)
                        .one();
                h.execute("UPDATE counter SET n = ? WHERE name = ?", n + 1, name);
            });
        }
    }

    /** A locked {@code @Transactional} method of one lock that calls the counter's locked method of another. */
    public static class Outer {
        private final Counter counter;

        Outer(Counter counter) {
            this.counter = counter;
        }

        /**
         * Increments under the lock in this method's transaction (no locked method inside it), then runs {@code
         * afterWrite} before it commits.
         */
        @FencedLocked("/locks/calls-it/#{#name}")
        @Transactional
        public long incrementThen(String name, Runnable afterWrite, @FenceToken long token) {
            counter.add(name);
            afterWrite.run();
            return token;
        }

        @FencedLocked("/locks/calls-it/#{#outerName}")
        @Transactional
        public <T> T run(String outerName, String innerName, Supplier<T> whileOpen) {
            counter.increment(innerName, 0); // the inner lock, its write in this method's transaction
            return whileOpen.get(); // the inner method has returned; this transaction has not committed
        }
    }
}
