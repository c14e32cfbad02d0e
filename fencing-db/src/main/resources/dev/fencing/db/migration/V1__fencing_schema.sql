-- The fencing schema: a guard trigger that refuses any UPDATE lowering a protected row's fence token,
-- fencing.protect_table(...) to put a table under that guard, and a watermark table for resources that
-- are not rows.
--
-- Shipped by dev.fencing:db on the classpath under dev/fencing/db/migration. The versions in this folder are
-- one sequence for the whole toolkit (V1 here, V100 for fenced-kafka): a new migration takes a number above
-- every released one, whichever module it serves, because Flyway refuses to run a version below one it has
-- applied (a V2 after V100) unless told outOfOrder. Every statement is idempotent, so a database that
-- already has parts of the schema (or one migrated by hand) migrates cleanly, and quiet on a fresh database
-- (no "already exists, skipping" notices, which Flyway logs as WARN).
--
-- Both functions run with search_path = pg_catalog, pg_temp: a trigger function runs with the search_path
-- of whoever issues the UPDATE, and a session that put its own schema first could otherwise shadow
-- to_jsonb() or the >= operator the guard relies on.

-- Not CREATE SCHEMA IF NOT EXISTS: Flyway creates the schema itself when it is the run's default schema
-- (the separate-history recipe, .schemas("fencing")), and the "already exists" notice would be a WARN.
DO
$$
    BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'fencing') THEN
            CREATE SCHEMA fencing;
        END IF;
    END
$$;

COMMENT ON SCHEMA fencing IS
    'Fencing-token enforcement (dev.fencing:db): guard trigger, protect_table(), watermark table.';

-- Raised as SQLSTATE FE001 so that clients can tell a refused stale write from other errors.
-- TG_ARGV[0] is the fence column, TG_ARGV[1..] the key columns named in the error.
-- Attached as an AFTER ROW trigger (see protect_table): it sees the row as finally stored, after every
-- BEFORE trigger. A BEFORE guard would fire in name order, so a user's BEFORE trigger named after it
-- ("zz_...") could lower the token once the guard had passed it. The trigger's WHEN clause
-- (NEW.col < OLD.col) is evaluated as the row is written and queues nothing unless the UPDATE lowers the
-- token, so the normal path costs one comparison; the comparison is repeated here so the function stays
-- correct if it is attached without that clause. Raising in an AFTER trigger fails the whole statement.
CREATE OR REPLACE FUNCTION fencing.guard_fence_token() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp AS
$$
DECLARE
    fence_column text := TG_ARGV[0];
    old_row      jsonb := to_jsonb(OLD);
    new_row      jsonb := to_jsonb(NEW);
    stored       bigint := (old_row ->> fence_column)::bigint;
    offered      bigint := (new_row ->> fence_column)::bigint;
    row_key      text := '';
    i            int;
BEGIN
    IF offered >= stored THEN
        RETURN NEW;
    END IF;
    FOR i IN 1 .. TG_NARGS - 1 LOOP
        row_key := row_key || CASE WHEN i > 1 THEN ', ' ELSE '' END
                   || TG_ARGV[i] || '=' || coalesce(old_row ->> TG_ARGV[i], 'NULL');
    END LOOP;
    RAISE EXCEPTION USING
        ERRCODE = 'FE001',
        MESSAGE = format('stale fence token refused on table %s.%s row (%s): stored token %s, offered token %s',
                         quote_ident(TG_TABLE_SCHEMA), quote_ident(TG_TABLE_NAME), row_key,
                         stored, coalesce(offered::text, 'NULL')),
        DETAIL = format('An UPDATE may not lower %s; the row was last written under token %s.',
                        quote_ident(fence_column), stored),
        HINT = 'Write through fenced-jdbc with the token of a current lock grant. A token far below the stored '
            || 'one usually means the token source went backwards (for example, a lock''s parent node was deleted).';
END
$$;

COMMENT ON FUNCTION fencing.guard_fence_token() IS
    'Trigger function installed by fencing.protect_table(): refuses an UPDATE that lowers the fence token.';

-- Puts an existing table under the guard: adds the fence column (BIGINT NOT NULL DEFAULT 0, so existing
-- rows start at 0 and any positive token may claim them) unless it exists, then (re)creates the
-- fencing_guard trigger (AFTER UPDATE, so that no other trigger can change the row after the check).
-- Safe to call again; calling it on a table guarded by an earlier version replaces that trigger.
-- key_columns default to the primary key.
-- Refuses a table in classic inheritance (CREATE TABLE ... INHERITS), parent or child: PostgreSQL fires a
-- parent's row triggers only for rows stored in the parent, and the parent's key does not constrain its
-- children's rows. Partitioned tables and partitions are fine (the trigger is cloned to every partition).
-- The check runs here, once: an inheritance child added to a protected table later is not guarded and is
-- unsupported (fenced-jdbc's FencedTable refuses such a table when it is built, and its statements use
-- UPDATE ONLY so they never touch a child's rows).
--
--   SELECT fencing.protect_table('public.inventory');
--   SELECT fencing.protect_table('app.accounts', ARRAY['tenant_id', 'account_id']);
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

    IF EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = target AND tgname = 'fencing_guard') THEN
        EXECUTE format('DROP TRIGGER fencing_guard ON %s', target);
    END IF;
    EXECUTE format('CREATE TRIGGER fencing_guard AFTER UPDATE ON %s FOR EACH ROW '
                       || 'WHEN (NEW.%I < OLD.%I) EXECUTE FUNCTION fencing.guard_fence_token(%s)',
                   target, fence_column, fence_column, trigger_args);
END
$$;

COMMENT ON FUNCTION fencing.protect_table(regclass, text[], text) IS
    'Adds the fence column (BIGINT NOT NULL DEFAULT 0) if missing and the fencing_guard trigger; idempotent.';

-- Highest accepted token per resource that is not a row (a file, an external API, a queue).
CREATE TABLE IF NOT EXISTS fencing.watermark
(
    resource_key TEXT PRIMARY KEY,
    fence_token  BIGINT      NOT NULL CHECK (fence_token > 0),
    updated_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);

COMMENT ON TABLE fencing.watermark IS
    'Highest accepted fence token per non-row resource; advanced only upwards (guarded by fencing_guard).';

SELECT fencing.protect_table('fencing.watermark', ARRAY ['resource_key'], 'fence_token');
