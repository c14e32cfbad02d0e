-- State of fenced-kafka's stale-dropping consumer (dev.fencing.kafka.PostgresWatermarkStore): per consumer
-- group, the highest accepted fence token of each record key, and the offset to read next, per partition.
--
-- Why not fencing.watermark (resource_key TEXT PRIMARY KEY): the consumer loads a partition's watermarks
-- when the partition is assigned, so it needs them indexed by (group, topic, partition); Kafka keys are
-- bytes, not text; two consumer groups applying the same topic to different systems need separate
-- watermarks; and the consumed offsets must be written in the same transaction as the watermarks, with a
-- compare-and-set so that a consumer that lost its partition cannot overwrite the new owner's progress.
-- Encoding all that into one text key would hide it from the planner and from a person reading the table.
--
-- A key's watermark lives under the partition its records go to; adding partitions to a topic moves keys
-- (and breaks Kafka's per-key order), so don't do that to a fenced topic.
--
-- Numbered in the toolkit's one sequence of versions (see V1). Idempotent. The fencing
-- schema comes from V1, which always runs first (same location): no CREATE SCHEMA IF NOT EXISTS here, whose
-- "already exists" notice Flyway would log as a WARN on every fresh database.

CREATE TABLE IF NOT EXISTS fencing.kafka_watermark (
    consumer_group  TEXT        NOT NULL,
    topic           TEXT        NOT NULL,
    kafka_partition INTEGER     NOT NULL CHECK (kafka_partition >= 0),
    record_key      BYTEA       NOT NULL,
    fence_token     BIGINT      NOT NULL CHECK (fence_token > 0),
    updated_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer_group, topic, kafka_partition, record_key)
);

COMMENT ON TABLE fencing.kafka_watermark IS
    'fenced-kafka: highest accepted fence token per consumer group, topic, partition and serialized record key.';

CREATE TABLE IF NOT EXISTS fencing.kafka_offset (
    consumer_group  TEXT        NOT NULL,
    topic           TEXT        NOT NULL,
    kafka_partition INTEGER     NOT NULL CHECK (kafka_partition >= 0),
    next_offset     BIGINT      NOT NULL CHECK (next_offset >= 0),
    updated_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer_group, topic, kafka_partition)
);

COMMENT ON TABLE fencing.kafka_offset IS
    'fenced-kafka: next offset to read per consumer group and partition, committed with the watermarks.';
