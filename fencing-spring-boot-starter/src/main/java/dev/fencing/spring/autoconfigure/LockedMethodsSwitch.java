package dev.fencing.spring.autoconfigure;

import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.core.type.AnnotatedTypeMetadata;

/**
 * {@code fencing.locked.enabled}, read as {@code FencingProperties} binds it: {@code on}, {@code yes} and {@code 1}
 * are {@code true} there too, and a value that is no boolean fails the start naming it. {@code
 * ConditionalOnBooleanProperty} matches {@code true} alone, so {@code fencing.locked.enabled=on} ran every locked
 * method without any lock while the bound property said it was on.
 */
final class LockedMethodsSwitch extends SpringBootCondition {
    static final String PROPERTY = "fencing.locked.enabled";

    @Override
    public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
        boolean enabled = Binder.get(context.getEnvironment())
                .bind(PROPERTY, Boolean.class)
                .orElse(true);
        return enabled
                ? ConditionOutcome.match(PROPERTY + " is not false")
                : ConditionOutcome.noMatch(PROPERTY + " is false: @FencedLocked methods run without any lock");
    }
}
