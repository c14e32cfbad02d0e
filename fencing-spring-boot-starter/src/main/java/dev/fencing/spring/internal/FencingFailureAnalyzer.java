package dev.fencing.spring.internal;

import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.diagnostics.FailureAnalyzer;
import org.springframework.core.Ordered;
import org.springframework.util.ClassUtils;

/**
 * Shows the toolkit's start-up failures the Spring Boot way: a {@link FencingStartupException} anywhere in the
 * cause chain, or fencing-kafka's {@code MissingTopicException} from a consumer the application built itself,
 * becomes the "Description" and "Action" of the "APPLICATION FAILED TO START" banner. Registered in {@code
 * META-INF/spring.factories}.
 */
public final class FencingFailureAnalyzer implements FailureAnalyzer, Ordered {
    private static final boolean KAFKA = ClassUtils.isPresent(
            "dev.fencing.kafka.MissingTopicException", FencingFailureAnalyzer.class.getClassLoader());

    /**
     * Before Boot's own analyzers, which are not ordered: one of them would otherwise describe a cause in the
     * chain generically (a handler property naming no bean as "a component required a bean named ...").
     */
    @Override
    public int getOrder() {
        return Ordered.HIGHEST_PRECEDENCE + 100;
    }

    @Override
    public FailureAnalysis analyze(Throwable failure) {
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            if (cause instanceof FencingStartupException startup) {
                return new FailureAnalysis(startup.description(), startup.action(), startup);
            }
        }
        return KAFKA ? MissingTopics.analyze(failure) : null;
    }

    /** Apart, so that the analyzer loads without fencing-kafka on the class path. */
    private static final class MissingTopics {
        static FailureAnalysis analyze(Throwable failure) {
            for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
                if (cause instanceof dev.fencing.kafka.MissingTopicException missing) {
                    return new FailureAnalysis(
                            missing.getMessage(),
                            "Create " + String.join(", ", missing.topics()) + " on " + missing.bootstrapServers()
                                    + ", or correct the topic names the consumer subscribes to.",
                            missing);
                }
            }
            return null;
        }
    }
}
