package dev.fencing.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks the {@code long} parameter of a {@link FencedLocked} method that receives the lock grant's fence
 * token. The caller passes {@code 0}; any other value is refused.
 */
@Target(ElementType.PARAMETER)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface FenceToken {}
