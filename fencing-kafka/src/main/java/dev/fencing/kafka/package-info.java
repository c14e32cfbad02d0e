/**
 * Fencing for Kafka: records stamped with the fence token they were produced under, and a consumer that
 * hands a record to your code only if its token is not older than the newest one already accepted for its
 * key.
 *
 * <ul>
 *   <li>{@link dev.fencing.kafka.FencedRecords} and {@link dev.fencing.kafka.FenceTokenHeader}: the producing
 *       side, with a plain {@code KafkaProducer}; the record key is the resource key.
 *   <li>{@link dev.fencing.kafka.FencedConsumer}: the poll loop that drops stale records, dead-letters what it
 *       cannot fence, and commits offsets only for finished records.
 *   <li>{@link dev.fencing.kafka.spi.WatermarkStore}: where watermarks and offsets live; {@link
 *       dev.fencing.kafka.InMemoryWatermarkStore} and {@link dev.fencing.kafka.PostgresWatermarkStore}.
 * </ul>
 *
 * <p>Producing, under the token of the lock grant the write is made under:
 *
 * <pre>{@code
 * producer.send(FencedRecords.create("reservations", "sku-7", "reserve 1", token));
 * }</pre>
 *
 * <p>Consuming:
 *
 * <pre>{@code
 * FencedConsumer<String, String> consumer = FencedConsumer.builder(
 *                 new StringDeserializer(), new StringDeserializer())
 *         .properties(Map.of(
 *                 "bootstrap.servers", bootstrap, "group.id", "reservation-log", "auto.offset.reset", "earliest"))
 *         .topics("reservations") // "reservations" and "reservations.dlt" must exist
 *         .watermarkStore(PostgresWatermarkStore.create(jdbi)) // required: see FencedConsumer
 *         .handler((record, token) -> inventory.apply(record.key(), record.value()))
 *         .build();
 * consumer.start(); // runs until consumer.close()
 * }</pre>
 *
 * Nothing here depends on ZooKeeper or on the lock client: a token is any positive {@code long} from a
 * monotone source.
 */
package dev.fencing.kafka;
