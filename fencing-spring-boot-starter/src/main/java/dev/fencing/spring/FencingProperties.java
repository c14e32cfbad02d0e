package dev.fencing.spring;

import dev.fencing.FencePolicy;
import dev.fencing.lock.zookeeper.TokenSource;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code fencing.*} properties of the starter. Every part can be switched off with its {@code enabled}
 * property, and backs off when the application defines the bean itself.
 *
 * <pre>
 * fencing.zookeeper.connect-string=zk1:2181,zk2:2181,zk3:2181
 * fencing.zookeeper.session-timeout=30s
 * # or, instead of ZooKeeper: fencing.etcd.endpoints=http://etcd1:2379,http://etcd2:2379
 * fencing.kafka.properties.bootstrap.servers=kafka:9092
 * fencing.kafka.consumers.reservation-log.topics=inventory-events
 * fencing.kafka.consumers.reservation-log.handler=reservationLog
 * fencing.redis.policy=strict
 * </pre>
 */
@ConfigurationProperties("fencing")
public class FencingProperties {
    /**
     * The lock service of @FencedLocked methods, the ShedLock provider and the election: zookeeper or etcd. Unset, it
     * is the one configured (fencing.zookeeper.connect-string or fencing.etcd.endpoints); with both set the start
     * fails until this names one. Set, the other service's auto-configuration makes nothing.
     */
    private String lockService;

    private final ZooKeeper zookeeper = new ZooKeeper();
    private final Etcd etcd = new Etcd();
    private final Locks locks = new Locks();
    private final Locked locked = new Locked();
    private final Jdbc jdbc = new Jdbc();
    private final Flyway flyway = new Flyway();
    private final Metrics metrics = new Metrics();
    private final Kafka kafka = new Kafka();
    private final Redis redis = new Redis();
    private final ShedLock shedlock = new ShedLock();
    private final Election election = new Election();

    public String getLockService() {
        return lockService;
    }

    public void setLockService(String lockService) {
        this.lockService = lockService;
    }

    public ZooKeeper getZookeeper() {
        return zookeeper;
    }

    public Etcd getEtcd() {
        return etcd;
    }

    public Locks getLocks() {
        return locks;
    }

    public Locked getLocked() {
        return locked;
    }

    public Jdbc getJdbc() {
        return jdbc;
    }

    public Flyway getFlyway() {
        return flyway;
    }

    public Metrics getMetrics() {
        return metrics;
    }

    public Kafka getKafka() {
        return kafka;
    }

    public Redis getRedis() {
        return redis;
    }

    public ShedLock getShedlock() {
        return shedlock;
    }

    public Election getElection() {
        return election;
    }

    /** The Curator client made when the application has none. */
    public static class ZooKeeper {
        /** Whether to auto-configure the Curator client and FencedLocks. */
        private boolean enabled = true;

        /**
         * ZooKeeper connect string, host:port[,host:port...][/chroot]. Without it no Curator client is made
         * (FencedLocks is still made on a CuratorFramework bean of the application's).
         */
        private String connectString;

        /** Session timeout asked of ZooKeeper; a frozen holder's lock passes on about this long after it froze. */
        private Duration sessionTimeout = Duration.ofSeconds(60);

        /** How long to wait for a connection before an operation fails. */
        private Duration connectionTimeout = Duration.ofSeconds(15);

        /**
         * How long start-up waits for the Curator client's first connection; when no server answers in that
         * time the application fails to start, naming the connect string. 0: start without waiting.
         */
        private Duration startupTimeout = Duration.ofSeconds(15);

        /**
         * Curator namespace prepended to every path, lock paths included; none by default. Whitespace at its start or
         * end fails the start: Curator would keep it, and the locks would live in another tree than those of
         * instances configured without it.
         */
        private String namespace;

        /** First sleep of the exponential backoff between retries of a failed ZooKeeper operation. */
        private Duration retryBaseSleep = Duration.ofMillis(100);

        /** How many times a failed ZooKeeper operation is retried, from 0 to 29. */
        private int retryMaxRetries = 5;

        private final Digest digest = new Digest();

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public String getConnectString() {
            return connectString;
        }

        public void setConnectString(String connectString) {
            this.connectString = connectString;
        }

        public Duration getSessionTimeout() {
            return sessionTimeout;
        }

        public void setSessionTimeout(Duration sessionTimeout) {
            this.sessionTimeout = sessionTimeout;
        }

        public Duration getConnectionTimeout() {
            return connectionTimeout;
        }

        public void setConnectionTimeout(Duration connectionTimeout) {
            this.connectionTimeout = connectionTimeout;
        }

        public Duration getStartupTimeout() {
            return startupTimeout;
        }

        public void setStartupTimeout(Duration startupTimeout) {
            this.startupTimeout = startupTimeout;
        }

        public String getNamespace() {
            return namespace;
        }

        public void setNamespace(String namespace) {
            this.namespace = namespace;
        }

        public Duration getRetryBaseSleep() {
            return retryBaseSleep;
        }

        public void setRetryBaseSleep(Duration retryBaseSleep) {
            this.retryBaseSleep = retryBaseSleep;
        }

        public int getRetryMaxRetries() {
            return retryMaxRetries;
        }

        public void setRetryMaxRetries(int retryMaxRetries) {
            this.retryMaxRetries = retryMaxRetries;
        }

        public Digest getDigest() {
            return digest;
        }
    }

    /** The jetcd client and the EtcdLocks made when the application has none. */
    public static class Etcd {
        /** Whether to auto-configure the jetcd client and EtcdLocks. */
        private boolean enabled = true;

        /**
         * Client URLs of the etcd cluster's members, like http://etcd1:2379,http://etcd2:2379. Without them no jetcd
         * client is made (EtcdLocks is still made on a jetcd Client bean of the application's, which the starter
         * never closes; for TLS, give the application such a bean).
         */
        private List<String> endpoints = new ArrayList<>();

        /**
         * Key prefix of the locks: a lock path /a/b has its contenders' keys under <prefix>/a%2Fb/. Segments separated
         * by single '/', none at either end.
         */
        private String prefix = "fencing/locks";

        /**
         * TTL of each grant's etcd lease, whole seconds, at least 2s: a frozen or cut-off holder's lock passes on
         * about this long after its last answered keep-alive.
         */
        private Duration leaseTtl = Duration.ofSeconds(10);

        /**
         * How long this JVM may stop (GC, SIGSTOP) before held leases are invalidated; below lease-ttl, at least
         * 20ms; default a third of lease-ttl, at least 200ms.
         */
        private Duration pauseTolerance;

        /** etcd user, with password, when the cluster has authentication on. */
        private String user;

        /** Password of the etcd user. Never logged. */
        private String password;

        /** How long the client waits for a connection to a member; jetcd's default when unset. */
        private Duration connectTimeout;

        /**
         * How long start-up waits for the cluster to answer a read; when no member answers in that time the
         * application fails to start, naming the endpoints. 0: start without waiting.
         */
        private Duration startupTimeout = Duration.ofSeconds(15);

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public List<String> getEndpoints() {
            return endpoints;
        }

        public void setEndpoints(List<String> endpoints) {
            this.endpoints = endpoints;
        }

        public String getPrefix() {
            return prefix;
        }

        public void setPrefix(String prefix) {
            this.prefix = prefix;
        }

        public Duration getLeaseTtl() {
            return leaseTtl;
        }

        public void setLeaseTtl(Duration leaseTtl) {
            this.leaseTtl = leaseTtl;
        }

        public Duration getPauseTolerance() {
            return pauseTolerance;
        }

        public void setPauseTolerance(Duration pauseTolerance) {
            this.pauseTolerance = pauseTolerance;
        }

        public String getUser() {
            return user;
        }

        public void setUser(String user) {
            this.user = user;
        }

        public String getPassword() {
            return password;
        }

        public void setPassword(String password) {
            this.password = password;
        }

        public Duration getConnectTimeout() {
            return connectTimeout;
        }

        public void setConnectTimeout(Duration connectTimeout) {
            this.connectTimeout = connectTimeout;
        }

        public Duration getStartupTimeout() {
            return startupTimeout;
        }

        public void setStartupTimeout(Duration startupTimeout) {
            this.startupTimeout = startupTimeout;
        }
    }

    /**
     * Digest credentials: the Curator client authenticates with them and FencedLocks gives lock nodes an
     * ACL that admits only this user. Set both or neither.
     */
    public static class Digest {
        /** Digest user; must not contain ':'. */
        private String user;

        /** Digest password. Never logged. */
        private String password;

        public String getUser() {
            return user;
        }

        public void setUser(String user) {
            this.user = user;
        }

        public String getPassword() {
            return password;
        }

        public void setPassword(String password) {
            this.password = password;
        }
    }

    /** Settings of the auto-configured FencedLocks, on ZooKeeper (etcd's are under fencing.etcd). */
    public static class Locks {
        /** Token source of ZooKeeper locks taken without naming one, @FencedLocked methods' included. */
        private TokenSource tokenSource = TokenSource.SEQUENCE;

        /**
         * How long this JVM may stop (GC, SIGSTOP) before held ZooKeeper leases are invalidated; default a third of
         * the negotiated session timeout.
         */
        private Duration pauseTolerance;

        /** With SEQUENCE tokens, refuse to issue a token this close to the 32-bit wrap of a lock's sequence. */
        private Integer sequenceWrapMargin;

        public TokenSource getTokenSource() {
            return tokenSource;
        }

        public void setTokenSource(TokenSource tokenSource) {
            this.tokenSource = tokenSource;
        }

        public Duration getPauseTolerance() {
            return pauseTolerance;
        }

        public void setPauseTolerance(Duration pauseTolerance) {
            this.pauseTolerance = pauseTolerance;
        }

        public Integer getSequenceWrapMargin() {
            return sequenceWrapMargin;
        }

        public void setSequenceWrapMargin(Integer sequenceWrapMargin) {
            this.sequenceWrapMargin = sequenceWrapMargin;
        }
    }

    /** The {@link FencedLocked} method annotation. */
    public static class Locked {
        /**
         * Whether methods annotated with @FencedLocked run under their lock. When on, a bean with such a method
         * and no FencedLocks bean fails the application's start. When off, the annotated methods run without
         * any lock.
         */
        private boolean enabled = true;

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }
    }

    /** The ShedLock LockProvider on the application's FencedLocks. */
    public static class ShedLock {
        /**
         * Whether to auto-configure a FencedLockProvider when ShedLock is on the class path, there is one
         * FencedLocks bean and no LockProvider bean.
         */
        private boolean enabled = true;

        /** Lock path under which each @SchedulerLock name gets its lock: <path-prefix>/<name>. */
        private String pathPrefix = "/locks/shedlock";

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public String getPathPrefix() {
            return pathPrefix;
        }

        public void setPathPrefix(String pathPrefix) {
            this.pathPrefix = pathPrefix;
        }
    }

    /** The application's participant in a leader election, made when an election path is set. */
    public static class Election {
        /** Whether to auto-configure the participant when fencing.election.path is set. */
        private boolean enabled = true;

        /** Election path; every instance of the service that takes part names the same one. */
        private String path;

        /**
         * This instance's id in the election, stored in its node; default spring.application.name (or
         * "application") followed by this JVM's pid@host.
         */
        private String participantId;

        /** Token source of the terms' tokens; default fencing.locks.token-source. */
        private TokenSource tokenSource;

        /** Whether the participant joins the election when the context starts; if not, call start() on it. */
        private boolean autoStartup = true;

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public String getPath() {
            return path;
        }

        public void setPath(String path) {
            this.path = path;
        }

        public String getParticipantId() {
            return participantId;
        }

        public void setParticipantId(String participantId) {
            this.participantId = participantId;
        }

        public TokenSource getTokenSource() {
            return tokenSource;
        }

        public void setTokenSource(TokenSource tokenSource) {
            this.tokenSource = tokenSource;
        }

        public boolean isAutoStartup() {
            return autoStartup;
        }

        public void setAutoStartup(boolean autoStartup) {
            this.autoStartup = autoStartup;
        }
    }

    /** The Jdbi and FencedWriter made on the application's DataSource. */
    public static class Jdbc {
        /** Whether to auto-configure a Jdbi (joined to Spring-managed transactions) and a FencedWriter. */
        private boolean enabled = true;

        /** Comparison policy of the FencedWriter: strict (a token writes a row once) or monotonic. */
        private FencePolicy policy = FencePolicy.STRICT;

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public FencePolicy getPolicy() {
            return policy;
        }

        public void setPolicy(FencePolicy policy) {
            this.policy = policy;
        }
    }

    /**
     * The FencedRedis made on a connection of its own, opened from the client of the application's
     * LettuceConnectionFactory.
     */
    public static class Redis {
        /**
         * Whether to auto-configure a FencedRedis when fencing-redis and Spring Data Redis are on the class path
         * and the application has one RedisConnectionFactory (a Lettuce one).
         */
        private boolean enabled = true;

        /** Comparison policy of the FencedRedis: strict (a token writes a key once) or monotonic. */
        private FencePolicy policy = FencePolicy.STRICT;

        /**
         * Refuse keys without a {hash tag}, as on Redis Cluster, for a standalone deployment that is to become
         * a cluster. Always on with a cluster connection.
         */
        private boolean clusterKeys = false;

        /**
         * After every applied write, WAIT for this many replicas (at most wait-timeout) and report how many had
         * it in the outcome; 0, the default, sends no WAIT. Narrows, does not close, the window in which a
         * failover loses the last token. Not on Redis Cluster.
         */
        private int waitForReplicas = 0;

        /**
         * How long WAIT blocks the connection at most; required with wait-for-replicas, at least 1ms, at most a
         * century, and shorter than the connection's command timeout (spring.data.redis.timeout).
         */
        private Duration waitTimeout;

        /**
         * Start even on a server whose maxmemory-policy evicts any key (allkeys-lru, allkeys-lfu, allkeys-random):
         * such a server, once full, can evict a token key, and a stale write to its key then lands. By default
         * the start fails naming the policy.
         */
        private boolean allowKeyEviction = false;

        /**
         * The longest key (UTF-8 bytes) a write may name, counted as its token key (the key and ":fencing-token"):
         * a longer one is refused, naming its size, before anything is sent. Default and upper bound 512 MB
         * (536870912), Redis's default proto-max-bulk-len; set it to the server's proto-max-bulk-len where that is
         * lower, since Redis answers a longer argument with a protocol error and closes the connection, failing
         * the writes pipelined behind it too. At least 15.
         */
        private int maxKeyBytes = 536_870_912;

        public boolean isAllowKeyEviction() {
            return allowKeyEviction;
        }

        public void setAllowKeyEviction(boolean allowKeyEviction) {
            this.allowKeyEviction = allowKeyEviction;
        }

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public FencePolicy getPolicy() {
            return policy;
        }

        public void setPolicy(FencePolicy policy) {
            this.policy = policy;
        }

        public boolean isClusterKeys() {
            return clusterKeys;
        }

        public void setClusterKeys(boolean clusterKeys) {
            this.clusterKeys = clusterKeys;
        }

        public int getWaitForReplicas() {
            return waitForReplicas;
        }

        public void setWaitForReplicas(int waitForReplicas) {
            this.waitForReplicas = waitForReplicas;
        }

        public Duration getWaitTimeout() {
            return waitTimeout;
        }

        public void setWaitTimeout(Duration waitTimeout) {
            this.waitTimeout = waitTimeout;
        }

        public int getMaxKeyBytes() {
            return maxKeyBytes;
        }

        public void setMaxKeyBytes(int maxKeyBytes) {
            this.maxKeyBytes = maxKeyBytes;
        }
    }

    /** The toolkit's Flyway migrations. */
    public static class Flyway {
        /**
         * Whether to add the toolkit's migrations (classpath:dev/fencing/db/migration) to Spring Boot's Flyway
         * locations, in the application's history. Their versions are V1 to V199: keep the application's own
         * at V1000 and above, or switch this off and run the toolkit's history in its own schema.
         */
        private boolean enabled = true;

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }
    }

    /** Micrometer meters on the application's MeterRegistry. */
    public static class Metrics {
        /** Whether the FencedWriter, the consumers and the lease listener count on the application's MeterRegistry. */
        private boolean enabled = true;

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }
    }

    /** Fenced consumers declared by properties. */
    public static class Kafka {
        /** Whether to start the consumers declared under fencing.kafka.consumers. */
        private boolean enabled = true;

        /**
         * Kafka consumer properties (and fencing.* keys of FencedConsumerConfig) shared by every declared
         * consumer, for example bootstrap.servers; a consumer's own properties override them. Not group.id:
         * each consumer has its own group-id, and a shared group.id fails the start.
         */
        private Map<String, String> properties = new LinkedHashMap<>();

        /** The consumers, by name; each is started and stopped with the application context. */
        private Map<String, Consumer> consumers = new LinkedHashMap<>();

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public Map<String, String> getProperties() {
            return properties;
        }

        public void setProperties(Map<String, String> properties) {
            this.properties = properties;
        }

        public Map<String, Consumer> getConsumers() {
            return consumers;
        }

        public void setConsumers(Map<String, Consumer> consumers) {
            this.consumers = consumers;
        }
    }

    /** Where a declared consumer keeps its watermarks and offsets. */
    public enum WatermarkStoreType {
        /** PostgresWatermarkStore on the application's Jdbi: durable, shared by every member of the group. */
        POSTGRES,
        /**
         * One InMemoryWatermarkStore shared by this application's consumers, for tests and a single instance.
         * It is empty after a restart, and Kafka's committed offsets are then ahead of it: a group that has
         * committed offsets stops at assignment with StoreBehindKafkaException (rather than accept records
         * whose tokens it no longer knows) until its offsets are reset; only a group without committed
         * offsets starts. Another instance of the application that takes over a partition stops the same way.
         */
        IN_MEMORY
    }

    /** One fenced consumer. */
    public static class Consumer {
        /** Topics to consume; each needs its dead-letter topic (default <topic>.dlt) to exist. */
        private List<String> topics = new ArrayList<>();

        /**
         * Name of the handler bean: a TransactionalRecordHandler<Handle, K, V> (its writes commit with the
         * watermarks and offsets, in PostgreSQL) or a RecordHandler<K, V>.
         */
        private String handler;

        /** Consumer group; default the consumer's properties.group.id, else the consumer's name. */
        private String groupId;

        /** Where watermarks and offsets are kept; a TransactionalRecordHandler needs postgres. */
        private WatermarkStoreType watermarkStore = WatermarkStoreType.POSTGRES;

        /**
         * Deserializer of record keys, a class with a public no-argument constructor; default Kafka's
         * StringDeserializer.
         */
        private Class<?> keyDeserializer;

        /**
         * Deserializer of record values, a class with a public no-argument constructor; default Kafka's
         * StringDeserializer.
         */
        private Class<?> valueDeserializer;

        /** Kafka consumer properties and fencing.* keys of FencedConsumerConfig for this consumer. */
        private Map<String, String> properties = new LinkedHashMap<>();

        /** Whether the consumer starts with the application context. */
        private boolean autoStartup = true;

        public List<String> getTopics() {
            return topics;
        }

        public void setTopics(List<String> topics) {
            this.topics = topics;
        }

        public String getHandler() {
            return handler;
        }

        public void setHandler(String handler) {
            this.handler = handler;
        }

        public String getGroupId() {
            return groupId;
        }

        public void setGroupId(String groupId) {
            this.groupId = groupId;
        }

        public WatermarkStoreType getWatermarkStore() {
            return watermarkStore;
        }

        public void setWatermarkStore(WatermarkStoreType watermarkStore) {
            this.watermarkStore = watermarkStore;
        }

        public Class<?> getKeyDeserializer() {
            return keyDeserializer;
        }

        public void setKeyDeserializer(Class<?> keyDeserializer) {
            this.keyDeserializer = keyDeserializer;
        }

        public Class<?> getValueDeserializer() {
            return valueDeserializer;
        }

        public void setValueDeserializer(Class<?> valueDeserializer) {
            this.valueDeserializer = valueDeserializer;
        }

        public Map<String, String> getProperties() {
            return properties;
        }

        public void setProperties(Map<String, String> properties) {
            this.properties = properties;
        }

        public boolean isAutoStartup() {
            return autoStartup;
        }

        public void setAutoStartup(boolean autoStartup) {
            this.autoStartup = autoStartup;
        }
    }
}
