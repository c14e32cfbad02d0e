package dev.fencing.spring.internal;

import dev.fencing.kafka.ConsumerState;
import dev.fencing.kafka.FencedConsumer;
import dev.fencing.kafka.FencedConsumerBuilder;
import dev.fencing.kafka.FencedConsumerConfig;
import dev.fencing.kafka.InMemoryWatermarkStore;
import dev.fencing.kafka.MissingTopicException;
import dev.fencing.kafka.PostgresWatermarkStore;
import dev.fencing.kafka.RecordHandler;
import dev.fencing.kafka.TransactionalRecordHandler;
import dev.fencing.spring.FencedConsumerCustomizer;
import dev.fencing.spring.FencingProperties;
import dev.fencing.spring.FencingProperties.WatermarkStoreType;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.BeanUtils;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.NoSuchBeanDefinitionException;
import org.springframework.context.SmartLifecycle;

/**
 * The fenced consumers declared under {@code fencing.kafka.consumers}, started when the application context
 * has started (after every other bean, in the last lifecycle phase) and closed when it stops (first). Each
 * consumer polls on its own thread. A transient failure (the store's database away, for one) is retried by the
 * consumer itself with its back-off ({@code fencing.retry.*} among the consumer's {@code properties}), never
 * skipping or re-applying a record; the health indicator reports DOWN while it waits. A consumer whose loop
 * fails for good stays stopped, is logged at ERROR, makes the health indicator report DOWN, and starts again
 * with {@link #restart(String)} (or the actuator operation {@code POST /actuator/fencingconsumers/{name}}). A consumer whose declaration is wrong (no such handler bean, a handler
 * of the wrong type, a store it cannot have, a bad property) fails the application's start with a message
 * naming the consumer. Thread-safe.
 */
public final class DeclaredConsumers implements SmartLifecycle, ConsumerStates {
    private static final Logger LOG = LoggerFactory.getLogger(DeclaredConsumers.class);

    private final Map<String, FencingProperties.Consumer> declared;
    private final Map<String, String> shared;
    private final BeanFactory beans;
    private final Supplier<Jdbi> jdbi;
    private final List<FencedConsumerCustomizer> customizers;
    private final InMemoryWatermarkStore inMemory = new InMemoryWatermarkStore();
    private final Map<String, Running> running = new LinkedHashMap<>();
    private boolean started;

    public DeclaredConsumers(
            FencingProperties.Kafka properties,
            BeanFactory beans,
            Supplier<Jdbi> jdbi,
            List<FencedConsumerCustomizer> customizers) {
        this.declared = new LinkedHashMap<>(properties.getConsumers());
        this.shared = new LinkedHashMap<>(properties.getProperties());
        if (shared.containsKey(ConsumerConfig.GROUP_ID_CONFIG)) {
            throw new FencingStartupException(
                    "fencing.kafka.properties." + ConsumerConfig.GROUP_ID_CONFIG + " is set to '"
                            + shared.get(ConsumerConfig.GROUP_ID_CONFIG) + "': a shared group would put every"
                            + " declared consumer in one group, over each one's own group-id",
                    "Remove it and set fencing.kafka.consumers.<name>.group-id where a consumer's group is not its"
                            + " name");
        }
        this.beans = beans;
        this.jdbi = jdbi;
        this.customizers = List.copyOf(customizers);
    }

    /** The declared consumers' names. */
    public List<String> names() {
        return new ArrayList<>(declared.keySet());
    }

    @Override
    public synchronized void start() {
        if (started) {
            return;
        }
        Map<String, FencedConsumer<?, ?>> built = new LinkedHashMap<>();
        try {
            for (Map.Entry<String, FencingProperties.Consumer> e : declared.entrySet()) {
                if (e.getValue().isAutoStartup()) {
                    built.put(e.getKey(), build(e.getKey(), e.getValue()));
                }
            }
            // before any loop starts: missing topics fail the application's start, every one of every consumer
            // named at once, instead of a consumer that fails on its own thread after the application was up
            checkTopics(built);
        } catch (RuntimeException e) {
            built.values().forEach(FencedConsumer::close);
            throw e;
        }
        built.forEach((name, consumer) -> running.put(name, new Running(consumer, logged(name, consumer.start()))));
        started = true;
    }

    /**
     * Starts the declared consumer {@code name} again after its loop failed, from what its store (or Kafka)
     * committed: the records it had not committed are handled again, none is skipped. The actuator operation
     * {@code POST /actuator/fencingconsumers/{name}} calls it.
     *
     * @return completes when the restarted loop ends
     * @throws IllegalArgumentException if no consumer of that name was started
     * @throws IllegalStateException if the consumer has not failed (running, retrying or stopped)
     */
    public synchronized CompletableFuture<Void> restart(String name) {
        Running r = running.get(name);
        if (r == null) {
            throw new IllegalArgumentException("no started fenced consumer named '" + name + "'; declared: "
                    + declared.keySet() + (started ? "" : " (the consumers are stopped)"));
        }
        if (r.consumer.state() != ConsumerState.FAILED) {
            throw new IllegalStateException("fenced consumer '" + name + "' is " + state(r) + ", not failed: only a"
                    + " failed consumer restarts");
        }
        CompletableFuture<Void> done = logged(name, r.consumer.restart());
        running.put(name, new Running(r.consumer, done));
        return done;
    }

    private static CompletableFuture<Void> logged(String name, CompletableFuture<Void> done) {
        done.whenComplete((ok, failure) -> {
            if (failure != null) {
                LOG.error(
                        "fenced consumer {} stopped with a failure; it stays stopped until restarted"
                                + " (DeclaredConsumers.restart, or POST /actuator/fencingconsumers/{})",
                        name,
                        name,
                        failure);
            }
        });
        return done;
    }

    @Override
    public synchronized void stop() {
        for (Running r : running.values()) {
            r.consumer.close();
        }
        running.clear();
        started = false;
    }

    @Override
    public synchronized boolean isRunning() {
        return started;
    }

    @Override
    public synchronized Map<String, String> states() {
        Map<String, String> states = new LinkedHashMap<>();
        for (String name : declared.keySet()) {
            Running r = running.get(name);
            states.put(name, r == null ? "stopped" : state(r));
        }
        return states;
    }

    /** Down while a consumer waits out a transient failure (it makes no progress) and once one has failed. */
    @Override
    public synchronized boolean anyDown() {
        return running.values().stream().anyMatch(r -> switch (r.consumer.state()) {
            case RETRYING, FAILED -> true;
            default -> r.done.isCompletedExceptionally();
        });
    }

    private static String state(Running r) {
        return switch (r.consumer.state()) {
            case NEW -> "starting";
            case RUNNING -> "running";
            case RETRYING -> "retrying (" + r.consumer.retries() + " retries so far)";
            case FAILED -> "failed: " + r.failure();
            case CLOSED -> r.done.isCompletedExceptionally() ? "failed: " + r.failure() : "stopped";
        };
    }

    private FencedConsumer<?, ?> build(String name, FencingProperties.Consumer declaration) {
        try {
            return builder(name, declaration).build();
        } catch (FencingStartupException e) {
            throw e;
        } catch (RuntimeException e) {
            throw new FencingStartupException(
                    "fencing.kafka.consumers." + name + ": " + e.getMessage(),
                    "Correct the declaration under fencing.kafka.consumers." + name + " (or set its auto-startup to"
                            + " false)",
                    e);
        }
    }

    /** Every missing topic of every consumer, in one failure; the first consumer's exception is its cause. */
    private static void checkTopics(Map<String, FencedConsumer<?, ?>> built) {
        Map<String, MissingTopicException> missing = new LinkedHashMap<>();
        for (Map.Entry<String, FencedConsumer<?, ?>> e : built.entrySet()) {
            try {
                e.getValue().checkTopics();
            } catch (MissingTopicException m) {
                missing.put(e.getKey(), m);
            }
        }
        if (missing.isEmpty()) {
            return;
        }
        StringBuilder description = new StringBuilder("Declared fenced consumers need Kafka topics that do not exist:");
        StringBuilder action = new StringBuilder("Create them before the application starts, for example:");
        missing.forEach((name, m) -> {
            description.append("\n\tfencing.kafka.consumers.").append(name).append(":");
            m.reasons().forEach((topic, why) -> description
                    .append("\n\t\t")
                    .append(topic)
                    .append(" (")
                    .append(why)
                    .append(")"));
            for (String topic : m.topics()) {
                action.append("\n\tkafka-topics.sh --bootstrap-server ")
                        .append(m.bootstrapServers())
                        .append(" --create --topic ")
                        .append(topic);
            }
        });
        action.append("\nor correct the names: ");
        action.append(String.join(
                "; ",
                missing.keySet().stream()
                        .map(name -> "fencing.kafka.consumers." + name + ".topics (a dead-letter topic: "
                                + "fencing.kafka.consumers." + name + ".properties."
                                + FencedConsumerConfig.DEAD_LETTER_TOPIC_CONFIG
                                + ", or the topic's name with .dlt)")
                        .toList()));
        FencingStartupException failure = new FencingStartupException(
                description.toString(),
                action.toString(),
                missing.values().iterator().next());
        missing.values().stream().skip(1).forEach(failure::addSuppressed);
        throw failure;
    }

    private FencedConsumerBuilder<Object, Object> builder(String name, FencingProperties.Consumer declaration) {
        Map<String, Object> properties = properties(name, declaration, shared);
        if (declaration.getTopics().isEmpty()) {
            throw new IllegalArgumentException("no topics: set fencing.kafka.consumers." + name + ".topics");
        }
        Deserializer<Object> keys = deserializer(declaration.getKeyDeserializer(), properties, true);
        Deserializer<Object> values = deserializer(declaration.getValueDeserializer(), properties, false);
        FencedConsumerBuilder<Object, Object> builder =
                FencedConsumer.builder(keys, values).properties(properties).topics(declaration.getTopics());
        Object handler = handler(name, declaration);
        if (handler instanceof TransactionalRecordHandler<?, ?, ?> transactional) {
            if (declaration.getWatermarkStore() != WatermarkStoreType.POSTGRES) {
                throw new IllegalArgumentException("handler " + declaration.getHandler()
                        + " is a TransactionalRecordHandler: its writes commit with the watermarks in PostgreSQL,"
                        + " so watermark-store must be postgres, not " + declaration.getWatermarkStore());
            }
            @SuppressWarnings("unchecked")
            TransactionalRecordHandler<org.jdbi.v3.core.Handle, Object, Object> cast =
                    (TransactionalRecordHandler<org.jdbi.v3.core.Handle, Object, Object>) transactional;
            builder.transactionalHandler(PostgresWatermarkStore.create(requireJdbi(name)), cast);
        } else if (handler instanceof RecordHandler<?, ?> plain) {
            @SuppressWarnings("unchecked")
            RecordHandler<Object, Object> cast = (RecordHandler<Object, Object>) plain;
            builder.handler(cast);
            builder.watermarkStore(
                    declaration.getWatermarkStore() == WatermarkStoreType.POSTGRES
                            ? PostgresWatermarkStore.create(requireJdbi(name))
                            : inMemory);
        } else {
            throw new IllegalArgumentException("handler bean '" + declaration.getHandler() + "' is a "
                    + handler.getClass().getName() + ", neither a RecordHandler nor a TransactionalRecordHandler");
        }
        for (FencedConsumerCustomizer customizer : customizers) {
            customizer.customize(name, builder);
        }
        return builder;
    }

    /**
     * The consumer's Kafka and fencing properties: the shared ones, then its own, and its group: {@code
     * group-id}, else its own {@code properties.group.id}, else its name. The shared properties hold no group
     * (refused when the consumers are declared).
     */
    static Map<String, Object> properties(
            String name, FencingProperties.Consumer declaration, Map<String, String> shared) {
        Map<String, Object> properties = new HashMap<>(shared);
        properties.putAll(declaration.getProperties());
        String own = declaration.getProperties().get(ConsumerConfig.GROUP_ID_CONFIG);
        String groupId = declaration.getGroupId();
        if (groupId != null && own != null && !groupId.equals(own)) {
            throw new IllegalArgumentException("group-id '" + groupId + "' and properties."
                    + ConsumerConfig.GROUP_ID_CONFIG + " '" + own + "' disagree: set only group-id");
        }
        properties.put(ConsumerConfig.GROUP_ID_CONFIG, groupId != null ? groupId : own != null ? own : name);
        return properties;
    }

    private Object handler(String name, FencingProperties.Consumer declaration) {
        if (declaration.getHandler() == null || declaration.getHandler().isBlank()) {
            throw new IllegalArgumentException(
                    "no handler: set fencing.kafka.consumers." + name + ".handler to the name of a handler bean");
        }
        try {
            return beans.getBean(declaration.getHandler());
        } catch (NoSuchBeanDefinitionException e) {
            throw new FencingStartupException(
                    "fencing.kafka.consumers." + name + ".handler names the bean '" + declaration.getHandler()
                            + "', and the application has no bean of that name",
                    "Set fencing.kafka.consumers." + name + ".handler to the name of a RecordHandler or"
                            + " TransactionalRecordHandler bean" + handlerBeans(),
                    e);
        }
    }

    /** The handler beans there are, for the message of a name that is not one of them. */
    private String handlerBeans() {
        if (!(beans instanceof ListableBeanFactory listable)) {
            return "";
        }
        List<String> names = new ArrayList<>();
        names.addAll(List.of(listable.getBeanNamesForType(RecordHandler.class, true, false)));
        names.addAll(List.of(listable.getBeanNamesForType(TransactionalRecordHandler.class, true, false)));
        return names.isEmpty() ? " (it has none)" : " (it has " + String.join(", ", names) + ")";
    }

    private Jdbi requireJdbi(String name) {
        Jdbi found = jdbi.get();
        if (found == null) {
            throw new IllegalArgumentException("watermark-store postgres needs a Jdbi bean (or a DataSource for the"
                    + " starter to make one); there is none. Give the application a DataSource, or set"
                    + " fencing.kafka.consumers." + name + ".watermark-store=in-memory");
        }
        return found;
    }

    @SuppressWarnings("unchecked")
    private static Deserializer<Object> deserializer(Class<?> type, Map<String, Object> properties, boolean isKey) {
        Class<?> chosen = type == null ? StringDeserializer.class : type;
        if (!Deserializer.class.isAssignableFrom(chosen)) {
            throw new IllegalArgumentException(
                    (isKey ? "key" : "value") + "-deserializer " + chosen.getName() + " is not a Kafka Deserializer");
        }
        Deserializer<Object> deserializer = (Deserializer<Object>) BeanUtils.instantiateClass(chosen);
        deserializer.configure(properties, isKey);
        return deserializer;
    }

    private static final class Running {
        final FencedConsumer<?, ?> consumer;
        final CompletableFuture<Void> done;

        Running(FencedConsumer<?, ?> consumer, CompletableFuture<Void> done) {
            this.consumer = consumer;
            this.done = done;
        }

        /** Never waits: the loop reports its failure as soon as it failed, before it has shut down. */
        String failure() {
            Throwable failure = consumer.failure();
            if (failure == null && done.isCompletedExceptionally()) {
                try {
                    done.join();
                } catch (RuntimeException e) {
                    failure = e.getCause() == null ? e : e.getCause();
                }
            }
            return failure == null ? "unknown" : failure.toString();
        }
    }
}
