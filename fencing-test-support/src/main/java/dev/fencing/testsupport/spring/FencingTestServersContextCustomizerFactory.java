package dev.fencing.testsupport.spring;

import dev.fencing.testsupport.KafkaServers;
import dev.fencing.testsupport.PostgresEndpoint;
import dev.fencing.testsupport.PostgresServers;
import dev.fencing.testsupport.RedisServers;
import dev.fencing.testsupport.ZooKeeperServers;
import dev.fencing.testsupport.spring.FencingTestServers.Server;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.MapPropertySource;
import org.springframework.test.context.ContextConfigurationAttributes;
import org.springframework.test.context.ContextCustomizer;
import org.springframework.test.context.ContextCustomizerFactory;
import org.springframework.test.context.MergedContextConfiguration;
import org.springframework.test.context.TestContextAnnotationUtils;

/**
 * Spring's hook for {@link FencingTestServers} (registered in {@code META-INF/spring.factories}): a test class
 * carrying it gets a context customizer that starts the servers and puts their addresses first among the
 * application's properties.
 */
public final class FencingTestServersContextCustomizerFactory implements ContextCustomizerFactory {
    /** The name of the property source the addresses are in. */
    public static final String PROPERTY_SOURCE = "fencingTestServers";

    @Override
    public ContextCustomizer createContextCustomizer(
            Class<?> testClass, List<ContextConfigurationAttributes> configAttributes) {
        FencingTestServers servers =
                TestContextAnnotationUtils.findMergedAnnotation(testClass, FencingTestServers.class);
        if (servers == null) {
            return null;
        }
        if (servers.value().length == 0) {
            throw new IllegalArgumentException("@FencingTestServers on " + testClass.getName()
                    + " names no server; name at least one of " + Arrays.toString(Server.values()) + " or remove it");
        }
        return new Customizer(EnumSet.copyOf(Arrays.asList(servers.value())));
    }

    /** Equal for equal server sets, so that Spring's context cache shares a context between such tests. */
    private record Customizer(Set<Server> servers) implements ContextCustomizer {
        @Override
        public void customizeContext(ConfigurableApplicationContext context, MergedContextConfiguration config) {
            Map<String, Object> properties = new LinkedHashMap<>();
            for (Server server : servers) {
                switch (server) {
                    case ZOOKEEPER ->
                        properties.put(
                                "fencing.zookeeper.connect-string",
                                ZooKeeperServers.shared().connectString());
                    case POSTGRES -> {
                        // a database of the context's own, dropped when the JVM exits with the server
                        PostgresEndpoint database = PostgresServers.shared().createDatabase("spring_test");
                        properties.put("spring.datasource.url", database.jdbcUrl());
                        properties.put("spring.datasource.username", database.user());
                        properties.put(
                                "spring.datasource.password", database.password() == null ? "" : database.password());
                    }
                    case KAFKA -> {
                        String bootstrap = KafkaServers.shared().bootstrapServers();
                        properties.put("spring.kafka.bootstrap-servers", bootstrap);
                        properties.put("fencing.kafka.properties.bootstrap.servers", bootstrap);
                    }
                    case REDIS ->
                        properties.put(
                                "spring.data.redis.url", RedisServers.shared().uri());
                }
            }
            context.getEnvironment().getPropertySources().addFirst(new MapPropertySource(PROPERTY_SOURCE, properties));
        }
    }
}
