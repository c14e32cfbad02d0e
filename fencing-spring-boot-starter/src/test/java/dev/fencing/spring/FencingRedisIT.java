package dev.fencing.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fencing.FencePolicy;
import dev.fencing.redis.FencedRedis;
import dev.fencing.redis.StaleFenceException;
import dev.fencing.redis.WriteOutcome;
import dev.fencing.spring.autoconfigure.FencingRedisAutoConfiguration;
import dev.fencing.spring.internal.FencedRedisConnection;
import dev.fencing.testsupport.RedisEndpoint;
import dev.fencing.testsupport.RedisServers;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.support.DefaultListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;

/**
 * The auto-configured {@link FencedRedis} against a real Redis: Spring Boot's own Lettuce connection
 * factory from {@code spring.data.redis.url}, the starter's bean on it, and Spring's {@link
 * StringRedisTemplate} beside it as the unfenced path. Each stale write the bean refuses is also sent as a
 * plain command through the template, which lands it.
 */
class FencingRedisIT {
    private static RedisEndpoint server;
    private static RedisClient outsider;
    private static StatefulRedisConnection<String, String> outsiderConnection;
    /** Plain commands from outside the application, to read what Redis holds. */
    private static RedisCommands<String, String> plain;

    private final String prefix =
            "spring" + Long.toString(ThreadLocalRandom.current().nextLong() >>> 1, 36) + ":";

    private final ApplicationContextRunner boot = new ApplicationContextRunner()
            .withConfiguration(
                    AutoConfigurations.of(DataRedisAutoConfiguration.class, FencingRedisAutoConfiguration.class))
            .withPropertyValues("spring.data.redis.url=" + server.uri());

    @BeforeAll
    static void startRedis() {
        server = RedisServers.start();
        outsider = RedisClient.create(server.uri());
        outsiderConnection = outsider.connect();
        plain = outsiderConnection.sync();
    }

    @AfterAll
    static void stopRedis() {
        outsiderConnection.close();
        outsider.shutdown();
        server.close();
    }

    private String key(String name) {
        return "{" + prefix + name + "}";
    }

    // ---- the bean, and the fence it keeps

    @Test
    void bootsLettuceFactoryGivesAFencedRedisThatRefusesAStaleSetWhileStringRedisTemplateLandsIt() {
        boot.run(context -> {
            assertThat(context)
                    .hasSingleBean(FencedRedis.class)
                    .hasSingleBean(FencedRedisConnection.class)
                    .hasSingleBean(LettuceConnectionFactory.class);
            FencedRedis redis = context.getBean(FencedRedis.class);
            StringRedisTemplate template = context.getBean(StringRedisTemplate.class);
            String key = key("order-7");
            assertThat(redis.policy()).isEqualTo(FencePolicy.STRICT);

            // given: holder 8 wrote after holder 7 paused
            assertThat(redis.trySet(key, "by-7", 7)).isEqualTo(new WriteOutcome.Applied(7, 0, null));
            assertThat(redis.trySet(key, "by-8", 8)).isEqualTo(new WriteOutcome.Applied(8, 7, null));

            // when: holder 7 resumes and writes through the fence
            WriteOutcome late = redis.trySet(key, "late-7", 7);

            // then: refused with the stored token, as Redis itself holds it
            assertThat(late).isEqualTo(new WriteOutcome.Rejected(8, 7));
            assertThat(plain.get(key)).isEqualTo("by-8");
            assertThat(plain.get(FencedRedis.tokenKey(key))).isEqualTo("8");
            assertThatThrownBy(() -> redis.set(key, "late-7", 7))
                    .isInstanceOf(StaleFenceException.class)
                    .hasMessageContaining(key);

            // the same late write as a plain SET through Spring's template overwrites the newer value
            template.opsForValue().set(key, "late-7");
            assertThat(plain.get(key)).isEqualTo("late-7");
        });
    }

    @Test
    void aStaleGuardedDecrementIsRefusedWhileTheTemplatesDecrementTakesStockAgain() {
        boot.run(context -> {
            FencedRedis redis = context.getBean(FencedRedis.class);
            StringRedisTemplate template = context.getBean(StringRedisTemplate.class);
            String stock = key("sku-42") + ":stock";
            plain.set(stock, "10");
            assertThat(redis.decrementBy(stock, 2, 7)).isEqualTo(8);
            assertThat(redis.decrementBy(stock, 3, 8)).isEqualTo(5);

            assertThat(redis.tryDecrementBy(stock, 4, 7)).isEqualTo(new WriteOutcome.Rejected(8, 7));
            assertThat(plain.get(stock)).isEqualTo("5");

            assertThat(template.opsForValue().decrement(stock, 4)).isEqualTo(1);
            assertThat(plain.get(stock)).isEqualTo("1");
        });
    }

    @Test
    void theBeansConnectionIsOneOfItsOwnAndClosesWithTheContext() {
        List<Long> ids = new ArrayList<>();
        boot.run(context -> {
            FencedRedisConnection connection = context.getBean(FencedRedisConnection.class);
            assertThat(connection.isCluster()).isFalse();
            // the bean writes over it: its last command shows in CLIENT LIST
            context.getBean(FencedRedis.class).set(key("seen"), "x", 1);
            long id = ((StatefulRedisConnection<String, String>) connection.connection())
                    .sync()
                    .clientId();
            ids.add(id);
            assertThat(clientLine(id)).contains(" cmd=").isNotEmpty();
            assertThat(connection.isOpen()).isTrue();
        });
        // the runner has closed the context
        long id = ids.get(0);
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(clientLine(id)).isEmpty());
    }

    @Test
    void theConnectionIsClosedByItsOwnBeanWhileTheFactoryAndItsClientRunOn() {
        boot.run(context -> {
            FencedRedisConnection connection = context.getBean(FencedRedisConnection.class);
            long id = ((StatefulRedisConnection<String, String>) connection.connection())
                    .sync()
                    .clientId();
            assertThat(clientLine(id)).isNotEmpty();

            ((DefaultListableBeanFactory) context.getBeanFactory()).destroySingleton("fencingRedisConnection");

            assertThat(connection.isOpen()).isFalse();
            await().atMost(Duration.ofSeconds(10))
                    .untilAsserted(() -> assertThat(clientLine(id)).isEmpty());
            LettuceConnectionFactory factory = context.getBean(LettuceConnectionFactory.class);
            assertThat(factory.isRunning()).isTrue();
            context.getBean(StringRedisTemplate.class).opsForValue().set(key("after"), "still");
            assertThat(plain.get(key("after"))).isEqualTo("still");
            connection.close(); // a second close does nothing
        });
    }

    @Test
    void monotonicPolicyFromThePropertyLetsAnEqualTokenWriteAgain() {
        boot.withPropertyValues("fencing.redis.policy=monotonic").run(context -> {
            FencedRedis redis = context.getBean(FencedRedis.class);
            String key = key("monotonic");
            assertThat(redis.policy()).isEqualTo(FencePolicy.MONOTONIC);
            redis.set(key, "first", 5);
            assertThat(redis.trySet(key, "second", 5)).isEqualTo(new WriteOutcome.Applied(5, 5, null));
            assertThat(redis.trySet(key, "stale", 4)).isEqualTo(new WriteOutcome.Rejected(5, 4));
            assertThat(plain.get(key)).isEqualTo("second");
        });
    }

    @Test
    void waitForReplicasFromThePropertiesReportsTheReplicasThatHadTheWrite() {
        boot.withPropertyValues("fencing.redis.wait-for-replicas=1", "fencing.redis.wait-timeout=20ms")
                .run(context -> {
                    WriteOutcome outcome = context.getBean(FencedRedis.class).trySet(key("waited"), "x", 1);
                    // a server without replicas: WAIT was sent and answered 0 (without it, NOT_ASKED)
                    assertThat(outcome).isEqualTo(new WriteOutcome.Applied(1, 0, null, 0));
                });
        boot.run(context -> assertThat(context.getBean(FencedRedis.class).trySet(key("unwaited"), "x", 1))
                .isEqualTo(new WriteOutcome.Applied(1, 0, null, WriteOutcome.Applied.NOT_ASKED)));
    }

    @Test
    void clusterKeysFromThePropertyRefusesAKeyWithoutAHashTag() {
        boot.withPropertyValues("fencing.redis.cluster-keys=true").run(context -> {
            FencedRedis redis = context.getBean(FencedRedis.class);
            String untagged = prefix + "untagged";
            assertThatThrownBy(() -> redis.set(untagged, "x", 1))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(untagged);
            assertThat(plain.exists(untagged)).isZero();
        });
        boot.run(context -> context.getBean(FencedRedis.class).set(prefix + "untagged", "x", 1));
        assertThat(plain.get(prefix + "untagged")).isEqualTo("x");
    }

    @Test
    void maxKeyBytesFromThePropertyRefusesALongerKeyBeforeAnythingIsSent() {
        // the token key is the key and ":fencing-token" (14 bytes): a 51-byte key makes a 65-byte token key
        String fits = key("k".repeat(50 - key("").length()));
        String tooLong = fits + "k";
        assertThat(FencedRedis.tokenKey(fits)).hasSize(64);
        boot.withPropertyValues("fencing.redis.max-key-bytes=64").run(context -> {
            FencedRedis redis = context.getBean(FencedRedis.class);
            assertThatThrownBy(() -> redis.set(tooLong, "x", 1))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("its token key 65, over the limit of 64");
            assertThat(plain.exists(tooLong, FencedRedis.tokenKey(tooLong))).isZero();
            redis.set(fits, "x", 1);
            assertThat(plain.get(fits)).isEqualTo("x");
        });
        // without the property the default, 512 MB, lets it through
        boot.run(context -> context.getBean(FencedRedis.class).set(tooLong, "y", 1));
        assertThat(plain.get(tooLong)).isEqualTo("y");
    }

    @Test
    void theReadmesCustomizerLimitsValuesAndRunsAfterTheProperties() {
        boot.withPropertyValues("fencing.redis.policy=monotonic")
                .withUserConfiguration(SmallValues.class)
                .withBean(FencedRedisCustomizer.class, () -> builder -> builder.policy(FencePolicy.STRICT))
                .run(context -> {
                    FencedRedis redis = context.getBean(FencedRedis.class);
                    // the property said monotonic, the customizer strict: the customizer came last
                    assertThat(redis.policy()).isEqualTo(FencePolicy.STRICT);
                    String big = "x".repeat(64 * 1024 + 1);
                    assertThatThrownBy(() -> redis.set(key("big"), big, 1))
                            .isInstanceOf(IllegalArgumentException.class)
                            .hasMessageContaining(key("big"));
                    assertThat(plain.exists(key("big"))).isZero();
                    redis.set(key("fits"), big.substring(1), 1);
                    assertThat(plain.strlen(key("fits"))).isEqualTo(64 * 1024);
                });
    }

    // ---- when there is none

    @Test
    void theApplicationsOwnFencedRedisWinsAndNoConnectionIsOpenedForTheStarters() {
        boot.withUserConfiguration(OwnFencedRedis.class).run(context -> {
            assertThat(context).hasSingleBean(FencedRedis.class).doesNotHaveBean(FencedRedisConnection.class);
            assertThat(context.getBean(FencedRedis.class)).isSameAs(context.getBean("ownFencedRedis"));
            assertThat(context.getBean(FencedRedis.class).policy()).isEqualTo(FencePolicy.MONOTONIC);
        });
    }

    @Test
    void withoutSpringDataRedisOnTheClassPathThereIsNoFencedRedis() {
        // the application's own factory is there, so only the class path condition can keep the bean away
        ApplicationContextRunner ownFactory = new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(FencingRedisAutoConfiguration.class))
                .withUserConfiguration(OwnConnectionFactory.class);
        ownFactory.run(context -> assertThat(context).hasSingleBean(FencedRedis.class));
        ownFactory
                .withClassLoader(new FilteredClassLoader("org.springframework.data.redis"))
                .run(context -> assertThat(context)
                        .hasNotFailed()
                        .hasSingleBean(RedisConnectionFactory.class)
                        .doesNotHaveBean(FencedRedis.class)
                        .doesNotHaveBean(FencedRedisConnection.class));
    }

    @Test
    void withoutFencedRedisOnTheClassPathThereIsNoFencedRedis() {
        boot.withClassLoader(new FilteredClassLoader(FencedRedis.class)).run(context -> assertThat(context)
                .hasSingleBean(LettuceConnectionFactory.class)
                .doesNotHaveBean(FencedRedisConnection.class));
    }

    @Test
    void redisEnabledFalseSwitchesItOff() {
        boot.withPropertyValues("fencing.redis.enabled=false").run(context -> assertThat(context)
                .hasSingleBean(LettuceConnectionFactory.class)
                .doesNotHaveBean(FencedRedis.class)
                .doesNotHaveBean(FencedRedisConnection.class));
    }

    // ---- bad settings fail the start, naming the property

    @Test
    void anUnknownPolicyFailsTheStartNamingTheProperty() {
        boot.withPropertyValues("fencing.redis.policy=strictest")
                .run(context -> assertThat(failureMessages(context)).contains("fencing.redis.policy"));
    }

    @Test
    void aNegativeWaitForReplicasFailsTheStartNamingTheProperty() {
        boot.withPropertyValues("fencing.redis.wait-for-replicas=-1").run(context -> assertThat(context)
                .getFailure()
                .rootCause()
                .hasMessageContaining("fencing.redis.wait-for-replicas must be >= 0 (0: no WAIT), got -1"));
    }

    @Test
    void waitForReplicasWithoutATimeoutFailsTheStartNamingTheMissingProperty() {
        boot.withPropertyValues("fencing.redis.wait-for-replicas=1").run(context -> assertThat(context)
                .getFailure()
                .rootCause()
                .hasMessageContaining("fencing.redis.wait-timeout is missing"));
    }

    @Test
    void aMaxKeyBytesOutOfRangeFailsTheStartNamingThePropertyAndTheValue() {
        for (String bad : List.of("0", "-1", "14", "536870913")) {
            boot.withPropertyValues("fencing.redis.max-key-bytes=" + bad).run(context -> assertThat(context)
                    .getFailure()
                    .rootCause()
                    .hasMessageContaining("fencing.redis.max-key-bytes must be in 15..536870912, got " + bad));
        }
        boot.withPropertyValues("fencing.redis.max-key-bytes=15")
                .run(context -> assertThat(context).hasSingleBean(FencedRedis.class));
        boot.withPropertyValues("fencing.redis.max-key-bytes=536870912")
                .run(context -> assertThat(context).hasSingleBean(FencedRedis.class));
    }

    @Test
    void aServerThatEvictsAnyKeyFailsTheStartNamingItsPolicyUnlessAllowed() {
        plain.configSet("maxmemory-policy", "allkeys-lru");
        try {
            boot.run(context ->
                    assertThat(context).getFailure().rootCause().hasMessageContaining("maxmemory-policy allkeys-lru"));
            boot.withPropertyValues("fencing.redis.allow-key-eviction=true")
                    .run(context -> assertThat(context).hasSingleBean(FencedRedis.class));
        } finally {
            plain.configSet("maxmemory-policy", "noeviction");
        }
    }

    @Test
    void aZeroWaitTimeoutFailsTheStartNamingTheProperty() {
        boot.withPropertyValues("fencing.redis.wait-for-replicas=1", "fencing.redis.wait-timeout=0ms")
                .run(context -> assertThat(context)
                        .getFailure()
                        .rootCause()
                        .hasMessageContaining("fencing.redis.wait-timeout must be at least 1ms, got PT0S"));
    }

    @Test
    void aWaitTimeoutTheConnectionCannotTakeFailsTheStartNamingTheProperty() {
        boot.withPropertyValues(
                        "spring.data.redis.timeout=1s",
                        "fencing.redis.wait-for-replicas=1",
                        "fencing.redis.wait-timeout=2s")
                .run(context -> assertThat(failureMessages(context))
                        .contains("fencing.redis.wait-timeout=PT2S cannot be used")
                        .contains("command timeout PT1S"));
        String beyondMillis = Long.MAX_VALUE + "s";
        boot.withPropertyValues("fencing.redis.wait-for-replicas=1", "fencing.redis.wait-timeout=" + beyondMillis)
                .run(context -> assertThat(context)
                        .getFailure()
                        .rootCause()
                        .hasMessageContaining("fencing.redis.wait-timeout")
                        .hasMessageContaining(Duration.ofSeconds(Long.MAX_VALUE).toString()));
    }

    @Test
    void aWaitTimeoutWithoutReplicasFailsTheStartRatherThanBeIgnored() {
        boot.withPropertyValues("fencing.redis.wait-timeout=50ms").run(context -> assertThat(context)
                .getFailure()
                .rootCause()
                .hasMessageContaining("fencing.redis.wait-timeout is set but fencing.redis.wait-for-replicas is 0"));
    }

    @Test
    void aConnectionFactoryThatIsNotLettucesFailsTheStartNamingTheSwitch() {
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(FencingRedisAutoConfiguration.class))
                .withBean(RedisConnectionFactory.class, FencingRedisIT::notLettuce)
                .run(context -> assertThat(context)
                        .getFailure()
                        .rootCause()
                        .hasMessageContaining("not a LettuceConnectionFactory")
                        .hasMessageContaining("fencing.redis.enabled=false"));
    }

    @Test
    void anUnreachableRedisFailsTheStart() {
        boot.withPropertyValues("spring.data.redis.url=redis://127.0.0.1:1", "spring.data.redis.timeout=2s")
                .run(context -> assertThat(failureMessages(context))
                        .contains("fencing.redis cannot open the FencedRedis connection"));
    }

    /** Every message of the start's failure and its causes, one string. */
    private static String failureMessages(AssertableApplicationContext context) {
        assertThat(context).hasFailed();
        StringBuilder messages = new StringBuilder();
        for (Throwable t = context.getStartupFailure(); t != null; t = t.getCause()) {
            messages.append(t.getMessage()).append('\n');
        }
        return messages.toString();
    }

    /** The line of {@code CLIENT LIST} for client {@code id}, empty once it has gone. */
    private static String clientLine(long id) {
        return plain.clientList()
                .lines()
                .filter(line -> line.startsWith("id=" + id + " "))
                .findFirst()
                .orElse("");
    }

    /** A RedisConnectionFactory that is not Lettuce's, as a Jedis application has; never called here. */
    private static RedisConnectionFactory notLettuce() {
        return (RedisConnectionFactory) Proxy.newProxyInstance(
                FencingRedisIT.class.getClassLoader(), new Class<?>[] {RedisConnectionFactory.class}, (p, m, a) -> {
                    if (m.getName().equals("toString")) {
                        return "not Lettuce";
                    }
                    throw new UnsupportedOperationException(m.getName());
                });
    }

    /** The customizer in docs/spring-boot.md. */
    @Configuration(proxyBeanMethods = false)
    static class SmallValues {
        @Bean
        FencedRedisCustomizer smallValues() {
            return builder -> builder.maxValueBytes(64 * 1024);
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnFencedRedis {
        @Bean(destroyMethod = "close")
        StatefulRedisConnection<String, String> ownConnection() {
            return outsider.connect();
        }

        @Bean
        FencedRedis ownFencedRedis(StatefulRedisConnection<String, String> ownConnection) {
            return FencedRedis.builder(ownConnection)
                    .policy(FencePolicy.MONOTONIC)
                    .build();
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnConnectionFactory {
        @Bean
        RedisConnectionFactory ownRedisConnectionFactory() {
            RedisURI uri = RedisURI.create(server.uri());
            return new LettuceConnectionFactory(uri.getHost(), uri.getPort());
        }
    }
}
