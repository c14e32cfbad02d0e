-- fenced-kafka (dev.fencing.kafka.PostgresWatermarkStore): per consumer group, the Kafka topic id of each
-- topic whose progress (fencing.kafka_offset, fencing.kafka_watermark) the group keeps.
--
-- Why: the other tables name a topic, and Kafka may delete a topic and create another under the same name.
-- Where the new topic's log already reached the stored offset, a consumer read on from there and skipped the
-- new log's first records, and judged the rest by the old topic's watermarks. The consumer records the topic's
-- id (Admin describeTopics, TopicDescription.topicId()) when it first takes one of its partitions, before it
-- saves any progress of it, and stops with TopicRecreatedException when the topic's id is another.
-- A table of its own rather than a column of fencing.kafka_offset: one id per group and topic, and the
-- per-unit offset writes stay as they are. Progress stored before this version has no row here: the
-- consumer records the id of the topic it finds at its next assignment.
--
-- After recreating a topic, delete the group's rows for it here too (with fencing.kafka_offset and
-- fencing.kafka_watermark), with every member of the group stopped.
--
-- Numbered in the toolkit's one sequence of versions (see V1). Idempotent.

CREATE TABLE IF NOT EXISTS fencing.kafka_topic (
    consumer_group  TEXT        NOT NULL,
    topic           TEXT        NOT NULL,
    topic_id        UUID        NOT NULL,
    recorded_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer_group, topic)
);

COMMENT ON TABLE fencing.kafka_topic IS
    'fenced-kafka: Kafka topic id of each topic whose offsets and watermarks a consumer group keeps here.';
