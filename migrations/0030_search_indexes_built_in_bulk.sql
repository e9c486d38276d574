-- A finished job's search row is no longer written by the report: job_search is filled and
-- indexed in bulk, a partition at a time, once the partition has filled.
--
-- Writing the search row was the largest part of the report's cost: in the README loop's report of
-- 100 jobs, 1.05 of 2.9 ms (EXPLAIN ANALYZE) and some 450 of its 980 bytes of WAL a job (the heap row
-- and four B-trees; with real args, the GIN pending-list entries on top: 1.4 of 1.9 kB), where
-- pg-boss's complete writes ~540. Written in bulk, the same rows and indexes cost a fraction: one
-- INSERT … SELECT of the partition's final jobs, then both GINs built with CREATE INDEX, whose keys
-- are sorted in memory and written once as compressed posting lists (on 30,000 rows in batches of
-- 100: 1.8 kB of WAL a row with the GINs kept row by row, 225 B without them; the bulk build of
-- both on 100,000 rows took 1.6 s, some 16 µs a row, in the background).
--
-- So: while a partition's range is still being given out, or many of its jobs are still open, its
-- final jobs have no search row; a search finds them on job itself (the range is at most a
-- partition's width: 100,000 ids by default). Each instance's SearchIndexBuilder then seals the
-- partition (job_search_sealed), waits until every transaction that may have missed the seal has
-- ended, copies the final jobs' rows in one statement, and builds both GINs with CREATE INDEX
-- CONCURRENTLY (reports and searches go on meanwhile). From the seal on, the triggers write the rows
-- of the range's jobs that end late, one by one, as they did for every job before. Partitions are
-- narrower than before (100,000 ids, growing with the history to a 64th of it, at most a million):
-- the unsealed range is read row by row.
--
-- On an existing database: the partitions holding rows are sealed and copied as they are (their
-- rows were written by the old triggers) and get their GINs back from the SearchIndexBuilder of the
-- first instance that runs this version, with the service running (until then a content search
-- over the history reads it sequentially); the empty ones ahead are made again narrower.
DROP INDEX IF EXISTS job_search_text_idx;
DROP INDEX IF EXISTS job_search_args_idx;

-- Creates the partitions that cover every job id up to three widths past the last one given out,
-- each `min_width` ids wide or, on a long history, a 64th of the ids from the oldest final job on,
-- at most ten times `min_width` (a partition is read sequentially by a content search until it has
-- filled and been indexed, so it must stay small; a long history still has a hundred or so, not
-- thousands); drops those whose range has no job left in the table and lies below the ids given
-- out. Returns how many it created and dropped.
CREATE OR REPLACE FUNCTION jobclock_search_upkeep(min_width bigint DEFAULT 100000, OUT created integer, OUT dropped integer)
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
  WHILE hi <= last_id + 3 * min_width LOOP
    w := least(10 * min_width, greatest(min_width, ((hi - history_lo) / 64 + min_width - 1) / min_width * min_width));
    lo := hi;
    part := 'job_search_p' || lo;
    -- Creating a partition holds job_search whole (ACCESS EXCLUSIVE) for the time it takes, so
    -- that a statement writing job_search meanwhile cannot send a row to the default partition by
    -- the old partition bounds (with a lighter lock, ATTACH lets it through and its row then fails
    -- the default partition's new constraint). It waits 100 ms at most for the lock (the workers'
    -- reports would queue behind it); if busy, the next call makes the partition, created three
    -- ahead of the ids given out, so there is time.
    BEGIN
      SET LOCAL lock_timeout = '100ms';
      LOCK TABLE job_search IN ACCESS EXCLUSIVE MODE;
      EXECUTE format('CREATE TABLE %I (LIKE job_search) WITH (autovacuum_vacuum_insert_threshold = -1)', part);
      -- rows that went to the default partition while this one was missing move into it
      EXECUTE format('WITH m AS (DELETE FROM job_search_default WHERE id >= $1 AND id < $2 RETURNING *) INSERT INTO %I SELECT * FROM m', part)
        USING lo, lo + w;
      -- the partition's B-trees are made here, on a table of no or few rows (its GINs once it has filled)
      EXECUTE format('ALTER TABLE job_search ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)', part, lo, lo + w);
    EXCEPTION WHEN lock_not_available THEN
      RAISE NOTICE 'job_search is busy: partition % is made at a later call', part;
      EXIT;
    END;
    hi := lo + w;
    created := created + 1;
  END LOOP;

  FOR r IN SELECT * FROM jobclock_search_ranges() s WHERE s.hi <= last_id LOOP
    CONTINUE WHEN EXISTS (SELECT 1 FROM job WHERE id >= r.lo AND id < r.hi);
    -- Dropping a partition holds job_search whole for a moment: waiting long behind a statement
    -- would stop the workers' reports queued behind it, so it gives up after 100 ms and tries
    -- again at the next call. A job of the range not yet committed (its id given out before the check)
    -- finds no partition when it ends, and its row goes to the default partition.
    BEGIN
      SET LOCAL lock_timeout = '100ms';
      EXECUTE format('DROP TABLE %I', r.name);
      DELETE FROM job_search_sealed s WHERE s.lo = r.lo;
      dropped := dropped + 1;
    EXCEPTION WHEN lock_not_available THEN
      RAISE NOTICE 'job_search partition % is busy: dropped at a later call', r.name;
    END;
  END LOOP;
  PERFORM set_config('lock_timeout', caller_lock_timeout, true);
END;
$$;

-- The partitions whose final jobs have search rows, copied in bulk (copied_at set): a search reads
-- job_search for these ranges and the job table for every other id. `sealed_at`: from then on the
-- triggers write the rows of the range's jobs as they end; the copy follows once every transaction
-- that began before the seal has ended.
CREATE TABLE job_search_sealed (
  lo        bigint PRIMARY KEY,
  hi        bigint NOT NULL,
  sealed_at timestamptz NOT NULL DEFAULT now(),
  copied_at timestamptz
);

-- The triggers write a row only for a job of a sealed range: the rows of the others are copied in
-- bulk when their partition is sealed. A report's jobs are those of the newest ids, above every
-- sealed range, so it costs one look at the newest sealed range.
CREATE OR REPLACE FUNCTION jobclock_search_on_update() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  top bigint := (SELECT hi FROM job_search_sealed ORDER BY lo DESC LIMIT 1);
BEGIN
  IF top IS NULL THEN
    RETURN NULL;
  END IF;
  INSERT INTO job_search (id, type, group_, worker, args, text)
    SELECT n.id, n.type, n.group_, n.worker, n.args, jobclock_search_text(n.args, n.subject, n.error)
      FROM jobclock_new n
     WHERE n.state IN ('finished', 'failed', 'dropped', 'cancelled')
       AND n.id < top
       AND n.id < (SELECT s.hi FROM job_search_sealed s WHERE s.lo <= n.id ORDER BY s.lo DESC LIMIT 1)
  ON CONFLICT (id) DO UPDATE
    SET type = EXCLUDED.type, group_ = EXCLUDED.group_, worker = EXCLUDED.worker, args = EXCLUDED.args, text = EXCLUDED.text
    WHERE (job_search.type, job_search.group_, job_search.worker, job_search.args, job_search.text)
          IS DISTINCT FROM (EXCLUDED.type, EXCLUDED.group_, EXCLUDED.worker, EXCLUDED.args, EXCLUDED.text);
  RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION jobclock_search_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.id < (SELECT s.hi FROM job_search_sealed s WHERE s.lo <= NEW.id ORDER BY s.lo DESC LIMIT 1) THEN
    INSERT INTO job_search (id, type, group_, worker, args, text)
      VALUES (NEW.id, NEW.type, NEW.group_, NEW.worker, NEW.args, jobclock_search_text(NEW.args, NEW.subject, NEW.error))
    ON CONFLICT (id) DO UPDATE
      SET type = EXCLUDED.type, group_ = EXCLUDED.group_, worker = EXCLUDED.worker, args = EXCLUDED.args, text = EXCLUDED.text;
  END IF;
  RETURN NULL;
END;
$$;

-- What the SearchIndexBuilder has to do, partition by partition, newest first: those to seal (the
-- ids given out have passed the range and fewer than a hundredth of its jobs are queued or waiting:
-- with a deep queue, the jobs of a passed range end long after, and their rows would all be
-- written one by one), those sealed but not copied yet, and those copied whose GINs (`text`, `args`)
-- are missing or invalid (a concurrent build cut short).
CREATE FUNCTION jobclock_search_work()
RETURNS TABLE (name text, lo bigint, hi bigint, sealed boolean, copied boolean, indexes text[], invalid text[])
LANGUAGE sql STABLE AS $$
  SELECT r.name, r.lo, r.hi, s.lo IS NOT NULL, s.copied_at IS NOT NULL,
         coalesce(array_agg(ic.relname::text ORDER BY ic.relname) FILTER (WHERE ic.relname IS NOT NULL), '{}'),
         coalesce(array_agg(ic.relname::text ORDER BY ic.relname) FILTER (WHERE NOT i.indisvalid), '{}')
    FROM jobclock_search_ranges() r
    LEFT JOIN job_search_sealed s ON s.lo = r.lo
    LEFT JOIN pg_index i ON i.indrelid = to_regclass(r.name)
      AND i.indexrelid IN (to_regclass(r.name || '_text_gin'), to_regclass(r.name || '_args_gin'))
    LEFT JOIN pg_class ic ON ic.oid = i.indexrelid
   WHERE s.lo IS NOT NULL
      OR (r.hi <= coalesce(pg_sequence_last_value(pg_get_serial_sequence('job', 'id')), 0) + 1
          AND (SELECT count(*) FROM (
                 SELECT 1 FROM job j WHERE j.id >= r.lo AND j.id < r.hi AND j.state = 'queued'
                 UNION ALL
                 SELECT 1 FROM job j WHERE j.id >= r.lo AND j.id < r.hi AND j.state = 'waiting'
                 LIMIT greatest(1, (r.hi - r.lo) / 100)) o) < greatest(1, (r.hi - r.lo) / 100))
   GROUP BY r.name, r.lo, r.hi, s.lo, s.copied_at
   ORDER BY r.lo DESC
$$;

-- The partitions made before, ahead of the ids given out or holding no row yet, are made again
-- narrower (dropped, newest first, while empty; the upkeep makes the new ones).
DO $$
DECLARE
  r record;
  empty boolean;
BEGIN
  LOCK TABLE job_search IN ACCESS EXCLUSIVE MODE;
  FOR r IN SELECT * FROM jobclock_search_ranges() ORDER BY lo DESC LOOP
    EXECUTE format('SELECT NOT EXISTS (SELECT 1 FROM %I)', r.name) INTO empty;
    EXIT WHEN NOT empty OR r.hi - r.lo <= 100000;
    EXECUTE format('DROP TABLE %I', r.name);
  END LOOP;
  -- the others hold the rows the old triggers wrote: sealed and copied as they are
  INSERT INTO job_search_sealed (lo, hi, copied_at) SELECT lo, hi, now() FROM jobclock_search_ranges();
END;
$$;
SELECT jobclock_search_upkeep();
