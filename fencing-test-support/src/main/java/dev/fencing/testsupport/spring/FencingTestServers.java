package dev.fencing.testsupport.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * On a Spring test class ({@code @SpringBootTest}, or any test run by Spring's TestContext framework): the
 * servers named in {@link #value} are started once per JVM (real ones, as fencing-test-support starts them: embedded,
 * or external when their environment variables are set) and their addresses are the application's properties,
 * ahead of {@code application.properties}:
 *
 * <ul>
 *   <li>{@link Server#ZOOKEEPER}: {@code fencing.zookeeper.connect-string};
 *   <li>{@link Server#POSTGRES}: {@code spring.datasource.url}, {@code .username}, {@code .password}, a fresh
 *       database for each Spring application context (Flyway then migrates an empty one);
 *   <li>{@link Server#KAFKA}: {@code spring.kafka.bootstrap-servers} and {@code
 *       fencing.kafka.properties.bootstrap.servers};
 *   <li>{@link Server#REDIS}: {@code spring.data.redis.url}.
 * </ul>
 *
 * <pre>{@code
 * @SpringBootTest
 * @FencingTestServers({Server.ZOOKEEPER, Server.POSTGRES})
 * class ReservationsTest { ... }
 * }</pre>
 *
 * Spring caches the application context as usual: test classes with the same configuration and the same
 * servers share one context, and so one database.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
public @interface FencingTestServers {

    /** The servers to start; ZooKeeper and PostgreSQL by default. */
    Server[] value() default {Server.ZOOKEEPER, Server.POSTGRES};

    /** A server fencing-test-support can start. */
    enum Server {
        ZOOKEEPER,
        POSTGRES,
        KAFKA,
        REDIS
    }
}
