package dev.fencing.spring.internal;

import dev.fencing.lock.Lease;
import dev.fencing.lock.zookeeper.TokenSource;
import dev.fencing.spring.FenceToken;
import dev.fencing.spring.FencedLocked;
import java.lang.reflect.Method;
import java.lang.reflect.Parameter;
import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.MethodParameter;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.core.annotation.AnnotatedMethod;
import org.springframework.expression.Expression;
import org.springframework.expression.ParseException;
import org.springframework.expression.common.CompositeStringExpression;
import org.springframework.expression.common.TemplateParserContext;
import org.springframework.expression.spel.standard.SpelExpressionParser;

/**
 * What a {@link FencedLocked} method asks for, read once per method: its path template, token source,
 * timeout, and which parameters receive the lease and the token. Refuses a misdeclared method with a
 * message naming it.
 */
final class LockedMethod {
    private static final SpelExpressionParser PARSER = new SpelExpressionParser();
    private static final TemplateParserContext TEMPLATE = new TemplateParserContext();
    private static final ParameterNameDiscoverer NAMES = new DefaultParameterNameDiscoverer();

    final Method method;
    final String template;
    final TokenSource tokenSource; // null: the FencedLocks bean's default
    final Duration timeout; // null: wait as long as it takes
    final boolean interruptOnLoss;
    final boolean skipIfLocked;
    final int leaseIndex; // -1: none
    final int tokenIndex; // -1: none
    private final Expression path;

    LockedMethod(Method method, FencedLocked locked) {
        this.method = method;
        this.template = locked.value();
        this.tokenSource = tokenSource(method, locked.tokenSource());
        this.interruptOnLoss = locked.interruptOnLoss();
        this.skipIfLocked = locked.skipIfLocked();
        if (skipIfLocked && method.getReturnType() != void.class && method.getReturnType() != Optional.class) {
            throw new IllegalStateException("@FencedLocked(skipIfLocked = true) on " + describe(method)
                    + ": a skipped call returns nothing, so the method must return void or Optional, not "
                    + method.getReturnType().getName());
        }
        if (template.isBlank()) {
            throw new IllegalStateException("@FencedLocked on " + describe(method) + " has an empty lock path");
        }
        try {
            this.path = PARSER.parseExpression(template, TEMPLATE);
        } catch (ParseException e) {
            throw new IllegalStateException(
                    "@FencedLocked on " + describe(method) + ": lock path template '" + template + "' does not parse: "
                            + e.getMessage(),
                    e);
        }
        this.timeout = timeout(method, locked.timeout());
        int lease = -1;
        int token = -1;
        Parameter[] parameters = method.getParameters();
        // @FenceToken on the parameter of an interface or superclass method this one implements counts too, as the
        // @FencedLocked found there does: otherwise a caller's own token would reach the method under the lock
        MethodParameter[] declared = new AnnotatedMethod(method).getMethodParameters();
        for (int i = 0; i < parameters.length; i++) {
            Parameter p = parameters[i];
            if (declared[i].hasParameterAnnotation(FenceToken.class)) {
                if (p.getType() != long.class && p.getType() != Long.class) {
                    throw new IllegalStateException("@FenceToken parameter " + p.getName() + " of " + describe(method)
                            + " must be a long, not " + p.getType().getName());
                }
                if (token >= 0) {
                    throw new IllegalStateException(describe(method) + " has more than one @FenceToken parameter");
                }
                token = i;
            } else if (p.getType() == Lease.class) {
                if (lease >= 0) {
                    throw new IllegalStateException(describe(method) + " has more than one Lease parameter");
                }
                lease = i;
            }
        }
        this.leaseIndex = lease;
        this.tokenIndex = token;
    }

    private static TokenSource tokenSource(Method method, TokenSource[] chosen) {
        if (chosen.length > 1) {
            throw new IllegalStateException("@FencedLocked on " + describe(method)
                    + ": name at most one tokenSource (none for fencing.locks.token-source), got "
                    + Arrays.toString(chosen));
        }
        return chosen.length == 0 ? null : chosen[0];
    }

    private static Duration timeout(Method method, String value) {
        if (value.isEmpty()) {
            return null;
        }
        Duration timeout;
        try {
            timeout = DurationStyle.detectAndParse(value);
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException(
                    "@FencedLocked on " + describe(method) + ": timeout '" + value + "' is not a duration", e);
        }
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalStateException(
                    "@FencedLocked on " + describe(method) + ": timeout must be positive, got '" + value + "'");
        }
        return timeout;
    }

    /**
     * The lock path for these arguments. An expression that gives null is refused rather than rendered
     * as nothing: {@code /locks/sku-#{#sku}} with a null SKU would otherwise lock {@code /locks/sku-}.
     */
    String path(Object[] arguments) {
        MethodBasedEvaluationContext context = new MethodBasedEvaluationContext(null, method, arguments, NAMES);
        Expression[] parts = path instanceof CompositeStringExpression composite
                ? composite.getExpressions()
                : new Expression[] {path};
        StringBuilder result = new StringBuilder();
        for (Expression part : parts) {
            Object value = part.getValue(context);
            if (value == null) {
                throw new IllegalArgumentException("@FencedLocked on " + describe(method) + ": '"
                        + part.getExpressionString() + "' in lock path template '" + template + "' gave null");
            }
            result.append(value);
        }
        return result.toString();
    }

    /** What a call that was skipped returns: nothing for a void method, an empty Optional otherwise. */
    Object skippedResult() {
        return method.getReturnType() == Optional.class ? Optional.empty() : null;
    }

    /** Checks the placeholders the caller passed, then puts the lease and its token in their place. */
    void inject(Object[] arguments, Lease lease) {
        if (leaseIndex >= 0) {
            arguments[leaseIndex] = lease;
        }
        if (tokenIndex >= 0) {
            arguments[tokenIndex] = lease.token();
        }
    }

    /** Refuses a caller's own lease or token: the token must be this lock's grant's. */
    void requirePlaceholders(Object[] arguments) {
        if (leaseIndex >= 0 && arguments[leaseIndex] != null) {
            throw new IllegalArgumentException(describe(method)
                    + ": pass null for its Lease parameter; the lease comes from @FencedLocked, got "
                    + arguments[leaseIndex]);
        }
        if (tokenIndex >= 0) {
            Object token = arguments[tokenIndex];
            if (token != null && ((Long) token) != 0L) {
                throw new IllegalArgumentException(describe(method)
                        + ": pass 0 for its @FenceToken parameter; the token comes from @FencedLocked, got " + token);
            }
        }
    }

    static String describe(Method method) {
        return method.getDeclaringClass().getName() + "." + method.getName();
    }

    @Override
    public String toString() {
        return describe(method);
    }
}
