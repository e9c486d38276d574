-- A debounced job is never pushed so late that it would expire instead of running: from SQL as
-- from POST /jobs, runAt stays at or before startBy − debounce (the job keeps its first
-- submission's startBy, as debounce_until counts from it), so workers get one debounce period to
-- lease it; a startBy nearer than that makes it runnable at once. r.run_at is now + debounce
-- (jobclock_job_row of 0024), so r.run_at − now() is the debounce.
DO $migration$
DECLARE
  s text := quote_ident(current_schema());
  body text;
BEGIN
  body := $fn$
CREATE OR REPLACE FUNCTION @s@.jobclock_insert_job_row(r @s@.job) RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, @s@, pg_temp
AS $$
DECLARE
  new_id bigint;
  debounce interval;
BEGIN
  IF r.debounce_key IS NULL THEN
    RETURN @s@.jobclock_insert_undebounced_job_row(r);
  END IF;
  debounce := r.run_at - now();
  -- one statement: a new job, or the queued holder of the key takes the args and the later runAt
  INSERT INTO @s@.job AS x (type, group_, args, subject, submitter, priority, run_at, max_attempts, debounce_key, debounce_until, timebox,
                            traceparent, start_by, created_at, updated_at)
  VALUES (r.type, r.group_, r.args, r.subject, r.submitter, r.priority, least(r.run_at, r.start_by - debounce), r.max_attempts,
          r.debounce_key, r.debounce_until, r.timebox, r.traceparent, r.start_by, now(), now())
  ON CONFLICT (debounce_key) WHERE state = 'queued' AND debounce_until IS NOT NULL
  DO UPDATE SET args = EXCLUDED.args, run_at = least(r.run_at, x.debounce_until, x.start_by - debounce), updated_at = EXCLUDED.updated_at
  RETURNING id INTO new_id;
  RETURN new_id;
END;
$$;
$fn$;
  EXECUTE replace(body, '@s@', s);
  EXECUTE replace('REVOKE ALL ON FUNCTION @s@.jobclock_insert_job_row(@s@.job) FROM PUBLIC', '@s@', s);
END;
$migration$;

-- The permits and tokens of groups nobody declared (kind 'default-group', migrations 0024, 0027)
-- are read by every lease and released by every report, through partial indexes. Those tables
-- start empty, and a plan made then — prepared statements keep their generic plan, and without
-- statistics `job_id IS NOT NULL` is taken to hold for nearly every row — scans them whole. They
-- do not stay small: a released permit is kept a minute (for the next holder's start), so at a few
-- thousand jobs a second over many groups they hold hundreds of thousands of free rows, and each
-- lease scanned them all (bench/README.md, 2026-11-26). These functions make the reads and the
-- release whatever the table's statistics say: planned with sequential scans disabled, each takes
-- its partial index.

-- The permits held now, by group: {group: [n, …]} (flow_slot_default_held_idx).
CREATE FUNCTION jobclock_default_held() RETURNS jsonb
LANGUAGE sql STABLE
SET enable_seqscan = off
AS $$
  SELECT coalesce(jsonb_object_agg(h.name, h.ns), '{}')
  FROM (
    SELECT s.name, array_agg(s.n) AS ns FROM flow_slot s
    WHERE s.kind = 'default-group' AND s.job_id IS NOT NULL
    GROUP BY s.name
  ) h
$$;

-- The tokens used after window_start, by group: {group: [n, …]}, those numbered up to max_n
-- (flow_token_default_used_idx).
CREATE FUNCTION jobclock_default_used(window_start timestamptz, max_n integer) RETURNS jsonb
LANGUAGE sql STABLE
SET enable_seqscan = off
AS $$
  SELECT coalesce(jsonb_object_agg(u.name, u.ns), '{}')
  FROM (
    SELECT t.name, array_agg(t.n) AS ns FROM flow_token t
    WHERE t.kind = 'default-group' AND t.used_at > window_start AND t.n <= max_n
    GROUP BY t.name
  ) u
$$;

-- Frees the permits held by these jobs, which stopped at `at`; returns how many (flow_slot_job_idx).
CREATE FUNCTION jobclock_release_permits(ids bigint[], at timestamptz) RETURNS bigint
LANGUAGE sql VOLATILE
SET enable_seqscan = off
AS $$
  WITH released AS (
    UPDATE flow_slot s SET job_id = NULL, released_at = at
    WHERE s.job_id = ANY (ids)
    RETURNING 1
  )
  SELECT count(*) FROM released
$$;

-- The row triggers that release a job's slots and permits when it stops other than through a
-- report (cancel, a lease that expired, a release, a deletion) look them up by job_id the same
-- way: planned without sequential scans, they take flow_slot_job_idx.
ALTER FUNCTION jobclock_release_slots() SET enable_seqscan = off;
ALTER FUNCTION jobclock_release_deleted_slots() SET enable_seqscan = off;
