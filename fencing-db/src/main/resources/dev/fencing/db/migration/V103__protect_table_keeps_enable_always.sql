-- fencing.protect_table(...), called again on a table whose guard was set to fire in every session
-- (ALTER TABLE ... ENABLE ALWAYS TRIGGER fencing_guard), keeps it so. It recreates the trigger, and a new
-- trigger fires only in ordinary sessions: before this version a migration that protected the table again
-- (to name other key columns, or to replace an earlier version's guard) silently let sessions with
-- session_replication_role = replica lower tokens again.
--
-- Why the guard is not ENABLE ALWAYS by default: PostgreSQL skips ordinary triggers (and foreign keys) in
-- replica sessions because a replica applies what its origin already checked. A logical replication
-- subscriber's apply worker runs as one; an ALWAYS guard there would refuse an update its origin accepted
-- (a partition move, a write of the origin's owner with the guard disabled, a row the subscriber also wrote
-- itself) and stop the whole subscription until someone skips the transaction. Setting
-- session_replication_role needs a superuser, who can also drop the trigger. A table that no subscription
-- applies to may have its guard fire in replica sessions too: ENABLE ALWAYS, which this version keeps.
--
-- The function as in V1 otherwise. Numbered in the toolkit's one sequence of versions (see V1). Idempotent.

CREATE OR REPLACE FUNCTION fencing.protect_table(
    target regclass,
    key_columns text[] DEFAULT NULL,
    fence_column text DEFAULT 'last_fence_token') RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp AS
$$
DECLARE
    keys         text[] := key_columns;
    key_column   text;
    column_type  regtype;
    not_null     boolean;
    trigger_args text;
    relatives    text;
    fires        "char";
BEGIN
    SELECT string_agg(h.inhrelid::regclass::text, ', ' ORDER BY h.inhrelid::regclass::text)
    INTO relatives
    FROM pg_inherits h
             JOIN pg_class c ON c.oid = h.inhparent
    WHERE h.inhparent = target
      AND c.relkind <> 'p';
    IF relatives IS NOT NULL THEN
        RAISE EXCEPTION 'fencing.protect_table(%): the table has inheritance children (%), whose rows its guard '
            'trigger does not see and its key does not constrain; protect each table on its own, or partition it',
            target, relatives;
    END IF;
    SELECT string_agg(h.inhparent::regclass::text, ', ' ORDER BY h.inhparent::regclass::text)
    INTO relatives
    FROM pg_inherits h
             JOIN pg_class c ON c.oid = h.inhrelid
    WHERE h.inhrelid = target
      AND NOT c.relispartition;
    IF relatives IS NOT NULL THEN
        RAISE EXCEPTION 'fencing.protect_table(%): the table is an inheritance child of %, and writes through '
            'the parent bypass its key and guard; protect a table without inheritance', target, relatives;
    END IF;
    IF fence_column IS NULL OR length(fence_column) = 0 THEN
        RAISE EXCEPTION 'fencing.protect_table(%): fence_column must not be empty', target;
    END IF;
    IF keys IS NULL THEN
        SELECT array_agg(a.attname::text ORDER BY k.ord)
        INTO keys
        FROM pg_index i
                 CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
                 JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
        WHERE i.indrelid = target
          AND i.indisprimary;
        IF keys IS NULL THEN
            RAISE EXCEPTION 'fencing.protect_table(%): the table has no primary key; pass key_columns', target;
        END IF;
    END IF;
    IF cardinality(keys) = 0 THEN
        RAISE EXCEPTION 'fencing.protect_table(%): key_columns must not be empty', target;
    END IF;
    FOREACH key_column IN ARRAY keys LOOP
        IF NOT EXISTS (SELECT 1
                       FROM pg_attribute
                       WHERE attrelid = target
                         AND attname = key_column
                         AND attnum > 0
                         AND NOT attisdropped) THEN
            RAISE EXCEPTION 'fencing.protect_table(%): key column "%" does not exist', target, key_column;
        END IF;
    END LOOP;

    -- checked here rather than with ADD COLUMN IF NOT EXISTS, whose "already exists" notice is noise
    IF NOT EXISTS (SELECT 1
                   FROM pg_attribute
                   WHERE attrelid = target
                     AND attname = fence_column
                     AND attnum > 0
                     AND NOT attisdropped) THEN
        EXECUTE format('ALTER TABLE %s ADD COLUMN %I BIGINT NOT NULL DEFAULT 0', target, fence_column);
    END IF;

    SELECT a.atttypid::regtype, a.attnotnull
    INTO column_type, not_null
    FROM pg_attribute a
    WHERE a.attrelid = target
      AND a.attname = fence_column
      AND a.attnum > 0
      AND NOT a.attisdropped;
    IF column_type <> 'bigint'::regtype THEN
        RAISE EXCEPTION 'fencing.protect_table(%): column "%" exists with type %, expected bigint',
            target, fence_column, column_type;
    END IF;
    IF NOT not_null THEN
        RAISE EXCEPTION 'fencing.protect_table(%): column "%" exists but is nullable; make it NOT NULL DEFAULT 0',
            target, fence_column;
    END IF;

    SELECT string_agg(quote_literal(arg), ', ')
    INTO trigger_args
    FROM unnest(ARRAY [fence_column] || keys) AS arg;

    SELECT t.tgenabled
    INTO fires
    FROM pg_trigger t
    WHERE t.tgrelid = target
      AND t.tgname = 'fencing_guard';
    IF fires IS NOT NULL THEN
        EXECUTE format('DROP TRIGGER fencing_guard ON %s', target);
    END IF;
    EXECUTE format('CREATE TRIGGER fencing_guard AFTER UPDATE ON %s FOR EACH ROW '
                       || 'WHEN (NEW.%I < OLD.%I) EXECUTE FUNCTION fencing.guard_fence_token(%s)',
                   target, fence_column, fence_column, trigger_args);
    -- a guard its owner set to fire in replica sessions too keeps firing there
    IF fires = 'A' THEN
        EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER fencing_guard', target);
    END IF;
END
$$;

COMMENT ON FUNCTION fencing.protect_table(regclass, text[], text) IS
    'Adds the fence column (BIGINT NOT NULL DEFAULT 0) if missing and the fencing_guard trigger (kept ENABLE '
        'ALWAYS when it was); idempotent.';
