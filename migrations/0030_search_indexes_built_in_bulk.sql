-- job_search's two GIN indexes (args jsonb_path_ops, trigrams of the text) are no longer kept by
-- every report: they are built in bulk, once, on each partition that has filled.
--
-- Writing a finished job's search row was most of the report's cost: of the ~1.9 kB of WAL a
-- finished job wrote, 1.4 kB was its search row, most of it the GIN pending-list entries (one index
-- tuple per trigram and per JSON path), and the pending lists' merges came on top. Built in bulk
-- (CREATE INDEX on a table that has all its rows), the same index costs a fraction of that: the keys
-- are sorted in memory and written once as compressed posting lists (measured on 30,000 rows in
-- batches of 100: 1.8 kB of WAL a row with both GINs kept row by row, 225 B without them; the bulk
-- build of both on 100,000 rows took 1.6 s, some 16 µs a row, in the background).
--
-- So a partition is written without GIN indexes while the job ids given out are in its range and
-- while many of its jobs are still open; then the instances' SearchIndexBuilder builds both with
-- CREATE INDEX CONCURRENTLY (searches and reports go on meanwhile) and from then on the few rows
-- still coming into it (jobs that ended late) are added to them one by one, as before. A content
-- search (q, args) reads the partitions not yet indexed sequentially: the newest one, of at most
-- its width of rows (100,000 by default), so partitions are narrower now (100,000 ids, growing with
-- the history to a 64th of it, at most ten times that) — before, a million ids or a 32nd.
--
-- On an existing database: the indexes of the parent are dropped (which drops every partition's,
-- at once); the partitions ahead of the ids given out, and the newest one if it has no row yet, are
-- made again narrower; the SearchIndexBuilder of the first instance that runs the new version
-- builds the GIN indexes of every partition that has filled (a few seconds a million rows), with
-- the service running: until it has, a content search over that history reads it sequentially.
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
      dropped := dropped + 1;
    EXCEPTION WHEN lock_not_available THEN
      RAISE NOTICE 'job_search partition % is busy: dropped at a later call', r.name;
    END;
  END LOOP;
  PERFORM set_config('lock_timeout', caller_lock_timeout, true);
END;
$$;

-- The range partitions that should have their GIN indexes: those the ids given out have passed and
-- that hold few open jobs still (fewer than a hundredth of their width queued or waiting: with a
-- deep queue, the jobs of a partition the ids have passed end long after, and their rows would all
-- go into the indexes one by one), and those made before this migration, which had their indexes
-- until now, filled or not (marked by a comment). With the indexes each has
-- (`text` and `args`, valid or not: an index whose concurrent build was cut short is invalid).
CREATE FUNCTION jobclock_search_filled()
RETURNS TABLE (name text, lo bigint, hi bigint, indexes text[], invalid text[])
LANGUAGE sql STABLE AS $$
  SELECT r.name, r.lo, r.hi,
         coalesce(array_agg(ic.relname::text ORDER BY ic.relname) FILTER (WHERE ic.relname IS NOT NULL), '{}'),
         coalesce(array_agg(ic.relname::text ORDER BY ic.relname) FILTER (WHERE NOT i.indisvalid), '{}')
    FROM jobclock_search_ranges() r
    LEFT JOIN pg_index i ON i.indrelid = to_regclass(r.name)
      AND i.indexrelid IN (to_regclass(r.name || '_text_gin'), to_regclass(r.name || '_args_gin'))
    LEFT JOIN pg_class ic ON ic.oid = i.indexrelid
   WHERE obj_description(to_regclass(r.name), 'pg_class') = 'jobclock: indexed before 0030'
      OR (r.hi <= coalesce(pg_sequence_last_value(pg_get_serial_sequence('job', 'id')), 0) + 1
          AND (SELECT count(*) FROM (
                 SELECT 1 FROM job j WHERE j.id >= r.lo AND j.id < r.hi AND j.state = 'queued'
                 UNION ALL
                 SELECT 1 FROM job j WHERE j.id >= r.lo AND j.id < r.hi AND j.state = 'waiting'
                 LIMIT greatest(1, (r.hi - r.lo) / 100)) o) < greatest(1, (r.hi - r.lo) / 100))
   GROUP BY r.name, r.lo, r.hi
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
  -- the others had their indexes until now: they have them again first, filled or not
  FOR r IN SELECT * FROM jobclock_search_ranges() LOOP
    EXECUTE format('COMMENT ON TABLE %I IS %L', r.name, 'jobclock: indexed before 0030');
  END LOOP;
END;
$$;
SELECT jobclock_search_upkeep();
