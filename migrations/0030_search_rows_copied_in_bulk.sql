-- A finished job's search row is no longer written by the report that ends it: job_search is
-- filled in bulk, a slice of 10,000 job ids at a time, once the ids have passed the slice.
--
-- Writing the search row was the larger part of what a finished job cost PostgreSQL beyond
-- pg-boss's complete: in EXPLAIN ANALYZE of the README loop's report of 100 jobs the search trigger
-- took 1.05 of 2.9 ms; with args and a subject like a user's, the lease and report of a job cost
-- 128 µs of PostgreSQL CPU and 3.6 kB of WAL with the row, 97 µs and 1.4 kB without it (pg-boss 12's
-- fetch and complete: 63 µs, 1.5 kB; bench/search-rows.ts), the copy 31 µs afterwards.
--
-- job_search_sealed holds the id ranges whose final jobs have their rows: the triggers write the
-- row of a job of a sealed range as it ends (a job that waited long, ended again, or was changed
-- while final), and none for any other. Each instance's SearchIndexBuilder seals each slice of
-- 10,000 ids once the ids given out have passed it and fewer than a hundredth of its jobs are still
-- queued or waiting (with a deeper queue the slice's jobs end later, and their rows would all be
-- written one by one), waits until every transaction that was running at the seal has ended (a
-- statement of theirs may have ended a job of the slice without seeing the seal), then copies the
-- rows of the slice's final jobs in one statement, off the workers' requests. A search reads the
-- final jobs of the ranges not copied yet on job itself, through a partial index of final jobs' ids
-- (the newest slice or two, and those a backlog holds back: a backlog of queued jobs is not walked).
--
-- On an existing database every id given out so far is sealed as copied (the old triggers wrote
-- their rows); the index of final jobs' ids is built here, holding writes to job meanwhile (some
-- seconds per million jobs).
CREATE TABLE job_search_sealed (
  lo        bigint PRIMARY KEY,
  hi        bigint NOT NULL,
  sealed_at timestamptz NOT NULL DEFAULT now(),
  copied_at timestamptz
);

INSERT INTO job_search_sealed (lo, hi, copied_at)
  SELECT 0, coalesce(pg_sequence_last_value(pg_get_serial_sequence('job', 'id')), 0) + 1, now();

-- the final jobs of the ranges not copied, found by id without walking the open ones
CREATE INDEX job_final_id_idx ON job (id) WHERE state IN ('finished', 'failed', 'dropped', 'cancelled');

-- The triggers write a row only for a job of a sealed range. A report's jobs are mostly those of
-- the newest ids, above every sealed range: one look at the newest sealed range tells.
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

-- The slices to seal now, lowest first: the ranges no sealed range covers, from the oldest job to
-- the last id given out, cut into `width` ids from where each begins (the newest only when it is
-- whole), each with fewer than a hundredth of its jobs queued or waiting.
CREATE FUNCTION jobclock_search_slices_due(width bigint DEFAULT 10000)
RETURNS TABLE (lo bigint, hi bigint)
LANGUAGE sql STABLE AS $$
  WITH last AS (SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence('job', 'id')), 0) + 1 AS id),
  s AS (SELECT s.lo, s.hi, lead(s.lo) OVER (ORDER BY s.lo) AS next_lo FROM job_search_sealed s),
  gaps AS (
    SELECT s.hi AS a, coalesce(s.next_lo, (SELECT id FROM last)) AS b, s.next_lo IS NULL AS tail FROM s
    UNION ALL
    SELECT coalesce((SELECT min(j.id) FROM job j), 0),
           coalesce((SELECT min(x.lo) FROM job_search_sealed x), (SELECT id FROM last)),
           NOT EXISTS (SELECT 1 FROM job_search_sealed)
  ),
  pieces AS (
    SELECT p.lo, least(p.lo + width, g.b) AS hi, g.tail
      FROM gaps g, generate_series(g.a, g.b - 1, width) AS p(lo)
     WHERE g.b > g.a
  )
  SELECT p.lo, p.hi FROM pieces p
   WHERE (NOT p.tail OR p.hi = p.lo + width)
     AND (SELECT count(*) FROM (
            SELECT 1 FROM job j WHERE j.id >= p.lo AND j.id < p.hi AND j.state = 'queued'
            UNION ALL
            SELECT 1 FROM job j WHERE j.id >= p.lo AND j.id < p.hi AND j.state = 'waiting'
            LIMIT greatest(1, (p.hi - p.lo) / 100)) o) < greatest(1, (p.hi - p.lo) / 100)
   ORDER BY p.lo
$$;
