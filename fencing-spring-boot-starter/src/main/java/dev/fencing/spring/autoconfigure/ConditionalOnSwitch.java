package dev.fencing.spring.autoconfigure;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.springframework.context.annotation.Conditional;

/**
 * Matches unless the boolean property {@link #value} is false, read as the starter's properties bind it: {@code
 * on}, {@code yes} and {@code 1} are {@code true} there too, and a value that is no boolean fails the start naming
 * it. {@code ConditionalOnBooleanProperty} matches {@code true} alone, so {@code fencing.locked.enabled=on} ran
 * every locked method without any lock while the bound property said it was on.
 */
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.TYPE, ElementType.METHOD})
@Documented
@Conditional(SwitchCondition.class)
@interface ConditionalOnSwitch {
    /** The property, say {@code fencing.locked.enabled}; missing, it is on. */
    String value();
}
