package dev.fencing.kafka.internal;

import java.util.function.BiFunction;
import java.util.function.Function;

/**
 * One {@code fencing.*} setting of the consumer, defined once, as Kafka's {@code ConfigDef} defines a key:
 * its key, the builder method that sets it, its type (by its parser), its default, its check and its doc.
 * Both ways of setting it (a property, a builder method) go through the same check. Immutable.
 *
 * @param key the property key ({@code FencedConsumerConfig.*_CONFIG})
 * @param method the builder method's name, used in messages about a value given to it
 * @param defaultValue the value when the setting is not given
 * @param parser a property's value (a string, a number, or an instance of the type) to the type; throws
 *     {@link IllegalArgumentException} naming the key and the value
 * @param check what is wrong with a parsed value (completing "{@code <method> ...}"), or null if nothing
 * @param doc what the setting does ({@code FencedConsumerConfig.*_DOC})
 */
public record FencingSetting<T>(
        String key,
        String method,
        T defaultValue,
        BiFunction<String, Object, T> parser,
        Function<T, String> check,
        String doc) {

    /**
     * The value of a property.
     *
     * @throws IllegalArgumentException naming the key and the value
     */
    public T fromProperty(Object raw) {
        T value = parser.apply(key, raw);
        String problem = check.apply(value);
        if (problem != null) {
            throw new IllegalArgumentException(key + "=" + raw + ": " + method + " " + problem);
        }
        return value;
    }

    /**
     * A value given to the builder method, checked.
     *
     * @throws IllegalArgumentException naming the method and the value
     */
    public T checked(T value) {
        if (value == null) {
            throw new NullPointerException(method);
        }
        String problem = check.apply(value);
        if (problem != null) {
            throw new IllegalArgumentException(method + " " + problem);
        }
        return value;
    }
}
