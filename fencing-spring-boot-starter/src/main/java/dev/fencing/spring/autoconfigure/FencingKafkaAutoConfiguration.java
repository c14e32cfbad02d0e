package dev.fencing.spring.autoconfigure;

import dev.fencing.kafka.FencedConsumer;
import dev.fencing.spring.FencedConsumerCustomizer;
import dev.fencing.spring.FencingProperties;
import dev.fencing.spring.internal.DeclaredConsumers;
import dev.fencing.spring.internal.FencingConsumersEndpoint;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Map;
import org.jdbi.v3.core.Jdbi;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.type.AnnotatedTypeMetadata;

/**
 * The fenced consumers declared under {@code fencing.kafka.consumers.<name>}, each with the handler bean
 * its {@code handler} property names, started when the application context has started and closed when
 * it stops ({@link DeclaredConsumers}, a {@code SmartLifecycle}). Present when {@code fencing-kafka} is on
 * the class path and at least one consumer is declared; off with {@code fencing.kafka.enabled=false}. With
 * Micrometer, each consumer counts on the application's {@code MeterRegistry}.
 */
@AutoConfiguration(after = FencingJdbcAutoConfiguration.class)
@ConditionalOnClass(FencedConsumer.class)
@ConditionalOnSwitch("fencing.kafka.enabled")
@Conditional(FencingKafkaAutoConfiguration.ConsumersDeclared.class)
@EnableConfigurationProperties(FencingProperties.class)
public class FencingKafkaAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    public DeclaredConsumers fencedConsumers(
            FencingProperties properties,
            BeanFactory beans,
            ObjectProvider<Jdbi> jdbi,
            ObjectProvider<FencedConsumerCustomizer> customizers) {
        return new DeclaredConsumers(
                properties.getKafka(),
                beans,
                jdbi::getIfUnique,
                customizers.orderedStream().toList());
    }

    /** The actuator endpoint that reads the consumers' states and restarts a failed one, with the actuator. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(Endpoint.class)
    static class ConsumersEndpointConfiguration {
        @Bean
        @ConditionalOnMissingBean
        FencingConsumersEndpoint fencingConsumersEndpoint(DeclaredConsumers consumers) {
            return new FencingConsumersEndpoint(consumers);
        }
    }

    /** Counts each consumer's records on the application's meter registry, if it has one. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(MeterRegistry.class)
    @ConditionalOnSwitch("fencing.metrics.enabled")
    static class ConsumerMetricsConfiguration {
        @Bean
        @ConditionalOnMissingBean(name = "fencingConsumerMeters")
        FencedConsumerCustomizer fencingConsumerMeters(ObjectProvider<MeterRegistry> registry) {
            return (name, builder) -> registry.ifAvailable(builder::meterRegistry);
        }
    }

    /** Matches when {@code fencing.kafka.consumers} declares at least one consumer. */
    static class ConsumersDeclared extends SpringBootCondition {
        @Override
        public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
            Map<String, Object> consumers = Binder.get(context.getEnvironment())
                    .bind("fencing.kafka.consumers", Bindable.mapOf(String.class, Object.class))
                    .orElse(Map.of());
            return consumers.isEmpty()
                    ? ConditionOutcome.noMatch("no consumer declared under fencing.kafka.consumers")
                    : ConditionOutcome.match("consumers declared: " + consumers.keySet());
        }
    }
}
