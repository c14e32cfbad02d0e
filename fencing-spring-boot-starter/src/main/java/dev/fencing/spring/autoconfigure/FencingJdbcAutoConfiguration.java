package dev.fencing.spring.autoconfigure;

import dev.fencing.jdbc.FencedWriter;
import dev.fencing.spring.FencedWriterCustomizer;
import dev.fencing.spring.FencingProperties;
import dev.fencing.spring.internal.SpringTransactionConnections;
import io.micrometer.core.instrument.MeterRegistry;
import javax.sql.DataSource;
import org.jdbi.v3.core.Jdbi;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.datasource.DataSourceUtils;

/**
 * A {@link Jdbi} on the application's single {@link DataSource} whose handles take part in Spring-managed
 * transactions (unless the application has a {@link Jdbi} bean), and a {@link FencedWriter} on the single
 * {@link Jdbi} (unless it has a {@link FencedWriter} bean). With Micrometer, the writer counts its outcomes
 * on the application's {@code MeterRegistry}. Off with {@code fencing.jdbc.enabled=false}.
 *
 * <p>Inside a {@code @Transactional} method, the Jdbi's handles use the transaction's connection: a fenced
 * write, like any other statement through this Jdbi, commits or rolls back with the transaction. Outside
 * one, each handle gets a connection from the pool, as {@code Jdbi.create(dataSource)} would. An
 * application's own {@link Jdbi} bean is used as it is: if it should join Spring's transactions, build it
 * on {@code TransactionAwareDataSourceProxy} or on a connection factory using {@code DataSourceUtils}.
 */
@AutoConfiguration(afterName = "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration")
@ConditionalOnClass({Jdbi.class, FencedWriter.class, DataSourceUtils.class})
@ConditionalOnSwitch("fencing.jdbc.enabled")
@EnableConfigurationProperties(FencingProperties.class)
public class FencingJdbcAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnSingleCandidate(DataSource.class)
    public Jdbi jdbi(DataSource dataSource) {
        return Jdbi.create(new SpringTransactionConnections(dataSource));
    }

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnSingleCandidate(Jdbi.class)
    public FencedWriter fencedWriter(
            Jdbi jdbi, FencingProperties properties, ObjectProvider<FencedWriterCustomizer> customizers) {
        FencedWriter.Builder builder =
                FencedWriter.builder(jdbi).policy(properties.getJdbc().getPolicy());
        customizers.orderedStream().forEach(c -> c.customize(builder));
        return builder.build();
    }

    /** Counts the writer's outcomes on the application's meter registry, if it has one. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(MeterRegistry.class)
    @ConditionalOnSwitch("fencing.metrics.enabled")
    static class WriterMetricsConfiguration {
        @Bean
        @ConditionalOnMissingBean(name = "fencingWriterMeters")
        FencedWriterCustomizer fencingWriterMeters(ObjectProvider<MeterRegistry> registry) {
            return builder -> registry.ifAvailable(builder::meterRegistry);
        }
    }
}
