package dev.fencing.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.kafka.MissingTopicException;
import dev.fencing.kafka.RecordHandler;
import dev.fencing.kafka.TransactionalRecordHandler;
import dev.fencing.spring.autoconfigure.FencingKafkaAutoConfiguration;
import dev.fencing.spring.autoconfigure.FencingLockedMethodsAutoConfiguration;
import dev.fencing.spring.autoconfigure.FencingZooKeeperAutoConfiguration;
import dev.fencing.spring.internal.FencingFailureAnalyzer;
import dev.fencing.spring.internal.FencingStartupException;
import java.lang.reflect.Constructor;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jdbi.v3.core.Handle;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.support.DefaultListableBeanFactory;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.diagnostics.FailureAnalyzer;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.annotation.AnnotationAwareOrderComparator;

/**
 * The toolkit's start-up failures reach the user as Spring Boot's "APPLICATION FAILED TO START" banner, with a
 * description that names the property or bean and an action; no server is needed to fail these.
 */
@ExtendWith(OutputCaptureExtension.class)
class StartupFailureAnalysisTest {
    private static final String NOWHERE = "127.0.0.1:1";

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    FencingZooKeeperAutoConfiguration.class,
                    FencingLockedMethodsAutoConfiguration.class,
                    FencingKafkaAutoConfiguration.class));

    /** A consumer whose handler property names a bean that does not exist ({@code orderHandlr}). */
    private final ApplicationContextRunner missingHandler = runner.withUserConfiguration(Handlers.class)
            .withPropertyValues(
                    "fencing.kafka.properties.bootstrap.servers=" + NOWHERE,
                    "fencing.kafka.consumers.orders.topics=orders",
                    "fencing.kafka.consumers.orders.handler=orderHandlr");

    @Test
    void anApplicationThatCannotStartShowsTheDescriptionAndTheActionInSpringBootsBanner(CapturedOutput output) {
        SpringApplicationBuilder application =
                new SpringApplicationBuilder(FencingZooKeeperAutoConfiguration.class).web(WebApplicationType.NONE);

        // no application.properties: this module's test one names servers by placeholders
        assertThatThrownBy(() -> application.run("--spring.config.name=none", "--fencing.zookeeper.connect-string= "))
                .hasRootCauseInstanceOf(FencingStartupException.class);
        assertThat(output.getAll())
                .contains("APPLICATION FAILED TO START")
                .contains("Description:")
                .contains("fencing.zookeeper.connect-string is empty")
                .contains("Action:")
                .contains("Set fencing.zookeeper.connect-string to host:port");
    }

    @Test
    void aHandlerBeanThatDoesNotExistNamesThePropertyAndTheHandlersThereAre() {
        missingHandler.run(context -> {
            FailureAnalysis analysis = new FencingFailureAnalyzer().analyze(context.getStartupFailure());
            assertThat(analysis.getDescription())
                    .isEqualTo("fencing.kafka.consumers.orders.handler names the bean 'orderHandlr', and the"
                            + " application has no bean of that name");
            assertThat(analysis.getAction())
                    .contains("fencing.kafka.consumers.orders.handler")
                    .contains("(it has orderHandler, ledgerHandler)");
        });
    }

    /**
     * Boot's own analyzer for a missing bean (not ordered) also matches the cause in the chain, and would say
     * "a component required a bean named ..." if it came first: the starter's is ordered before it.
     */
    @Test
    void theStartersDescriptionWinsOverBootsOwnForAMissingHandlerBean() throws Exception {
        Class<?> type = Class.forName(
                "org.springframework.boot.autoconfigure.diagnostics.analyzer.NoSuchBeanDefinitionFailureAnalyzer");
        Constructor<?> constructor = type.getDeclaredConstructor(BeanFactory.class);
        constructor.setAccessible(true);
        FailureAnalyzer boots = (FailureAnalyzer) constructor.newInstance(new DefaultListableBeanFactory());
        List<FailureAnalyzer> analyzers = new ArrayList<>(List.of(boots, new FencingFailureAnalyzer()));
        AnnotationAwareOrderComparator.sort(analyzers);

        missingHandler.run(context -> {
            assertThat(boots.analyze(context.getStartupFailure())).isNotNull();
            assertThat(analyzers.get(0).analyze(context.getStartupFailure()).getDescription())
                    .startsWith("fencing.kafka.consumers.orders.handler names the bean 'orderHandlr'");
        });
    }

    @Test
    void aSharedGroupIdIsDescribedWithTheWayOut() {
        runner.withUserConfiguration(Handlers.class)
                .withPropertyValues(
                        "fencing.kafka.properties.bootstrap.servers=" + NOWHERE,
                        "fencing.kafka.properties.group.id=everyone",
                        "fencing.kafka.consumers.orders.topics=orders",
                        "fencing.kafka.consumers.orders.handler=orderHandler")
                .run(context -> {
                    FailureAnalysis analysis = new FencingFailureAnalyzer().analyze(context.getStartupFailure());
                    assertThat(analysis.getDescription())
                            .contains("fencing.kafka.properties.group.id is set to 'everyone'");
                    assertThat(analysis.getAction()).contains("fencing.kafka.consumers.<name>.group-id");
                });
    }

    @Test
    void aLockedMethodWithoutLocksIsDescribedNamingTheMethod() {
        runner.withUserConfiguration(LockedJob.class).run(context -> {
            FailureAnalysis analysis = new FencingFailureAnalyzer().analyze(context.getStartupFailure());
            assertThat(analysis.getDescription())
                    .contains("@FencedLocked method")
                    .contains("run")
                    .contains("the application has no FencedLocks bean");
            assertThat(analysis.getAction()).contains("fencing.zookeeper.connect-string");
        });
    }

    @Test
    void aMissingTopicFromAConsumerTheApplicationBuiltItselfIsAnalyzedToo() {
        Map<String, String> missing = new LinkedHashMap<>();
        missing.put("orders", "it is subscribed by group g");
        missing.put("orders.dlt", "it is the dead-letter topic of orders for group g");
        MissingTopicException failure = new MissingTopicException(missing, NOWHERE);

        FailureAnalysis analysis =
                new FencingFailureAnalyzer().analyze(new IllegalStateException("bean creation failed", failure));

        assertThat(analysis.getDescription()).contains("2 topics do not exist: orders (", "orders.dlt (");
        assertThat(analysis.getAction()).contains("orders, orders.dlt").contains(NOWHERE);
        assertThat(new FencingFailureAnalyzer().analyze(new IllegalStateException("unrelated")))
                .isNull();
    }

    @Configuration(proxyBeanMethods = false)
    static class Handlers {
        @Bean
        RecordHandler<String, String> orderHandler() {
            return (record, token) -> {};
        }

        @Bean
        TransactionalRecordHandler<Handle, String, String> ledgerHandler() {
            return (handle, record, token) -> {};
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class LockedJob {
        @Bean
        Job job() {
            return new Job();
        }
    }

    static class Job {
        @FencedLocked("/locks/job")
        public void run() {}
    }
}
