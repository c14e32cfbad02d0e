-- fenced-kafka (dev.fencing.kafka.PostgresWatermarkStore): room on each page of fencing.kafka_watermark for
-- HOT updates.
--
-- Why: every unit of work raises the watermarks of the keys it accepted, so a busy key's row is rewritten
-- once per unit. An UPDATE is HOT (heap-only: no new entry in the primary key, whose entries carry the
-- group, topic and key and are the widest part of the table) only if the new row version fits on the page
-- of the old one. At the default fillfactor of 100 an insert fills pages completely, so nearly every raise
-- was a non-HOT update: a new index entry, its WAL, and index bloat for vacuum to clean. 50 leaves room on
-- every page for a new version of each of its rows: a unit may raise every key of a page at once (the old
-- versions cannot be pruned before the unit commits; measured at 70, a unit raising 300 keys made 163 of its
-- updates HOT). Page pruning reclaims the dead versions as the page is read again. The table is about twice
-- as large as at 100, for rows of a few dozen bytes.
-- No indexed column is ever updated (fence_token, applied_offset and updated_at are not indexed), the other
-- condition for HOT. Check with pg_stat_user_tables.n_tup_hot_upd against n_tup_upd.
--
-- Applies to pages filled from now on; a large existing table gets the layout on its next rewrite
-- (VACUUM FULL or pg_repack), at a time of the operator's choosing. Takes only a SHARE UPDATE EXCLUSIVE
-- lock and rewrites nothing. Numbered in the toolkit's one sequence of versions (see V1). Idempotent.

ALTER TABLE fencing.kafka_watermark SET (fillfactor = 50);
