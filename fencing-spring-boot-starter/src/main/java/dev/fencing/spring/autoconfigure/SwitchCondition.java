package dev.fencing.spring.autoconfigure;

import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.core.type.AnnotatedTypeMetadata;

/** {@link ConditionalOnSwitch}'s condition. */
final class SwitchCondition extends SpringBootCondition {
    @Override
    public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
        String property = (String) metadata.getAnnotationAttributes(ConditionalOnSwitch.class.getName())
                .get("value");
        boolean on = Binder.get(context.getEnvironment())
                .bind(property, Boolean.class)
                .orElse(true);
        return on
                ? ConditionOutcome.match(property + " is not false")
                : ConditionOutcome.noMatch(property + " is false");
    }
}
