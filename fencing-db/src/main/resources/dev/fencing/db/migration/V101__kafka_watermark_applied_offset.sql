-- fenced-kafka's key-parallel consumer with a transactional handler (dev.fencing.kafka.PostgresWatermarkStore):
-- per key, the offset of the last record whose effect committed with the key's watermark.
--
-- Why: the key-parallel consumer finishes records of different keys out of order, so a partition's stored
-- offset (fencing.kafka_offset) is the lowest record not yet finished, and records above it may already have
-- been applied when the consumer crashes. After a restart it reads again from the stored offset and skips a
-- record whose offset is at or below its key's applied offset: applied once, neither twice nor never.
-- -1: no record applied by the key-parallel consumer (rows written by the serial consumer, whose stored
-- offset is exact, keep -1).
--
-- Numbered in the toolkit's one sequence of versions (see V1). A constant default: no table rewrite.

ALTER TABLE fencing.kafka_watermark ADD COLUMN IF NOT EXISTS applied_offset BIGINT NOT NULL DEFAULT -1;

COMMENT ON COLUMN fencing.kafka_watermark.applied_offset IS
    'fenced-kafka key-parallel consumer: offset of the key''s last record applied in the watermark''s transaction; -1 if none.';
