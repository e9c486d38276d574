-- job_search is partitioned by id range, so that a finished job's search row goes into a small
-- partition whose indexes stay in memory.
--
-- Behind 10 million final jobs the worker loop lost a fifth of its throughput to the two GINs of
-- job_search (args, trigrams) taking in new rows: each job brings nearly unique keys, so each
-- insert dirtied leaf pages spread over an index far larger than the buffer cache, read in and
-- written out again at every checkpoint. With both GINs dropped, the loop behind the history ran at
-- its empty-table rate. Ids grow with time, so a new final job's row lands in the newest partition
-- (or the one before), whose indexes hold a million rows or so; the older partitions are only read.
--
-- jobclock_search_upkeep() keeps the partitions: it creates them ahead of the job id sequence and
-- drops those whose whole id range no longer has a job in the table (retention deleted them all).
-- Every instance's retention sweep calls it (one at a time: an advisory lock). A row whose partition
-- does not exist (yet, or no longer) goes to job_search_default, never lost and never an error; the
-- upkeep moves such rows into the partition it creates for them.
--
-- On a large history this writes job_search again (like 0013 and 0017: about a minute per few
-- million final jobs), holding off writes to job meanwhile.
CREATE TABLE job_search_0018 (
  id      bigint NOT NULL,
  type    text NOT NULL,
  group_  text NOT NULL,
  worker  text,
  args    jsonb,
  text    text NOT NULL
) PARTITION BY RANGE (id);

-- as in 0013, on every partition: rows are only ever added (and deleted by retention), so no vacuum
-- for inserts, which would read both GINs whole for nothing
CREATE TABLE job_search_default PARTITION OF job_search_0018 DEFAULT WITH (autovacuum_vacuum_insert_threshold = -1);

ALTER TABLE job_search RENAME TO job_search_0017;
ALTER TABLE job_search_0018 RENAME TO job_search;

-- The range partitions of job_search, lowest first (not the default one).
CREATE FUNCTION jobclock_search_ranges() RETURNS TABLE (name text, lo bigint, hi bigint) LANGUAGE sql STABLE AS $$
  SELECT c.relname::text, b[1]::bigint, b[2]::bigint
    FROM pg_inherits i
    JOIN pg_class c ON c.oid = i.inhrelid,
         regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \(''?(-?[0-9]+)''?\) TO \(''?(-?[0-9]+)''?\)') b
   WHERE i.inhparent = 'job_search'::regclass AND b IS NOT NULL
   ORDER BY 2
$$;

-- Creates the partitions that cover every job id up to two partitions past the last one given out,
-- each `min_width` ids wide or, on a long history, a 32nd of the ids from the oldest final job on
-- (so that a table of any length has a few dozen partitions, not thousands; an old job still open,
-- say one due next year, has no search row and does not widen them); drops those whose range has
-- no job left in the table and lies below the ids given out. Returns how many it created and dropped.
CREATE FUNCTION jobclock_search_upkeep(min_width bigint DEFAULT 1000000, OUT created integer, OUT dropped integer)
LANGUAGE plpgsql AS $$
DECLARE
  last_id bigint := coalesce(pg_sequence_last_value(pg_get_serial_sequence('job', 'id')), 0);
  first_id bigint;
  history_lo bigint;
  lo bigint;
  hi bigint;
  w bigint;
  part text;
  r record;
  -- the caller's lock_timeout, given back at the end (the 100 ms below are for this function only)
  caller_lock_timeout text := current_setting('lock_timeout');
BEGIN
  created := 0;
  dropped := 0;
  IF min_width < 1 THEN
    RAISE EXCEPTION 'min_width must be at least 1, not %', min_width;
  END IF;
  -- one instance at a time; the others wait, then find the work done
  PERFORM pg_advisory_xact_lock(hashtext('jobclock_search_upkeep'));
  first_id := coalesce((SELECT min(id) FROM job), last_id + 1);
  history_lo := coalesce((SELECT min(id) FROM job_search), first_id);

  SELECT max(s.hi) INTO hi FROM jobclock_search_ranges() s;
  IF hi IS NULL THEN
    hi := first_id / min_width * min_width;
  END IF;
  WHILE hi <= last_id + 2 * min_width LOOP
    w := greatest(min_width, ((hi - history_lo) / 32 + min_width - 1) / min_width * min_width);
    lo := hi;
    part := 'job_search_p' || lo;
    -- Creating a partition holds job_search whole (ACCESS EXCLUSIVE) for the time it takes (about
    -- 20 ms with its six indexes), so that a statement writing job_search meanwhile cannot send a
    -- row to the default partition by the old partition bounds (with a lighter lock, ATTACH lets it
    -- through and its row then fails the default partition's new constraint). It waits 100 ms at most for the lock
    -- (the workers' reports would queue behind it); if busy, the next sweep makes the partition,
    -- created two ahead of the ids given out, so there is time.
    BEGIN
      SET LOCAL lock_timeout = '100ms';
      LOCK TABLE job_search IN ACCESS EXCLUSIVE MODE;
      EXECUTE format('CREATE TABLE %I (LIKE job_search) WITH (autovacuum_vacuum_insert_threshold = -1)', part);
      -- rows that went to the default partition while this one was missing move into it
      EXECUTE format('WITH m AS (DELETE FROM job_search_default WHERE id >= $1 AND id < $2 RETURNING *) INSERT INTO %I SELECT * FROM m', part)
        USING lo, lo + w;
      -- the partition's indexes are made here, on a table of no or few rows
      EXECUTE format('ALTER TABLE job_search ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)', part, lo, lo + w);
    EXCEPTION WHEN lock_not_available THEN
      RAISE NOTICE 'job_search is busy: partition % is made at a later sweep', part;
      EXIT;
    END;
    hi := lo + w;
    created := created + 1;
  END LOOP;

  FOR r IN SELECT * FROM jobclock_search_ranges() s WHERE s.hi <= last_id LOOP
    CONTINUE WHEN EXISTS (SELECT 1 FROM job WHERE id >= r.lo AND id < r.hi);
    -- Dropping a partition holds job_search whole for a moment: waiting long behind a statement
    -- would stop the workers' reports queued behind it, so it gives up after 100 ms and tries
    -- again at the next sweep. A job of the range not yet committed (its id given out before the check)
    -- finds no partition when it ends, and its row goes to the default partition.
    BEGIN
      SET LOCAL lock_timeout = '100ms';
      EXECUTE format('DROP TABLE %I', r.name);
      dropped := dropped + 1;
    EXCEPTION WHEN lock_not_available THEN
      RAISE NOTICE 'job_search partition % is busy: dropped at a later sweep', r.name;
    END;
  END LOOP;
  PERFORM set_config('lock_timeout', caller_lock_timeout, true);
END;
$$;

SELECT jobclock_search_upkeep();

INSERT INTO job_search (id, type, group_, worker, args, text)
  SELECT id, type, group_, worker, args, text FROM job_search_0017;
DROP TABLE job_search_0017;

ALTER TABLE job_search ADD PRIMARY KEY (id);
CREATE INDEX job_search_type_idx ON job_search (type, id);
CREATE INDEX job_search_group_idx ON job_search (group_, id);
CREATE INDEX job_search_worker_idx ON job_search (worker, id) WHERE worker IS NOT NULL;
CREATE INDEX job_search_args_idx ON job_search USING gin (args jsonb_path_ops) WITH (gin_pending_list_limit = 512);
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
    CREATE INDEX job_search_text_idx ON job_search USING gin (text gin_trgm_ops);
  ELSE
    RAISE NOTICE 'pg_trgm is not installed: text search (q) runs without its index';
  END IF;
END
$$;

-- Deleted jobs take their search rows with them (0013), now through the partitions that hold them:
-- the ids as an array are known when the statement runs, so only those partitions are read, by
-- their primary keys. Joined to the deleted rows instead, the planner may hash every partition whole.
CREATE OR REPLACE FUNCTION jobclock_search_on_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM job_search
   WHERE id = ANY (ARRAY(SELECT id FROM jobclock_gone))
     AND id BETWEEN (SELECT min(id) FROM jobclock_gone) AND (SELECT max(id) FROM jobclock_gone);
  RETURN NULL;
END;
$$;
