-- Debounce (uniqueKey + debounce) and a concurrency limit for every group nobody declared
-- (groups-default).

-- A debounced job keeps its key here, not in unique_key: the key is held only while the job is
-- queued and not yet leased (a submission while it runs creates a new job, which unique_key's
-- index, covering running jobs too, would refuse). debounce_until is first submission +
-- debounceMax: the latest runAt a later submission may move it to. The lease clears it, so a job
-- queued again after an attempt (retry, release) no longer holds the key.
ALTER TABLE job
  ADD COLUMN debounce_key text CHECK (length(debounce_key) BETWEEN 1 AND 200),
  ADD COLUMN debounce_until timestamptz;

CREATE UNIQUE INDEX job_debounce_key_idx ON job (debounce_key) WHERE state = 'queued' AND debounce_until IS NOT NULL;

-- Policies for keys without one of their own: kind 'group' is GET|PATCH /groups-default. One row
-- per kind at most; no row, no default.
CREATE TABLE flow_default (
  kind        text PRIMARY KEY CHECK (kind IN ('group')),
  concurrency integer CHECK (concurrency >= 1),
  updated_at  timestamptz NOT NULL
);

-- The permits of the default concurrency live in flow_slot under kind 'default-group' (apart from
-- the declared groups' rows): made by the lease that first needs one (an upsert that takes it),
-- released by the same triggers as declared slots (job_id, holds_slot), and deleted by the
-- reaper once free for a while (released_at keeps the next holder from starting before the last
-- one stopped, across instances' clocks). Held ones, looked up by every lease while a default is set:
CREATE INDEX flow_slot_default_held_idx ON flow_slot (name) WHERE kind = 'default-group' AND job_id IS NOT NULL;
CREATE INDEX flow_slot_default_free_idx ON flow_slot (released_at) WHERE kind = 'default-group' AND job_id IS NULL;

-- jobclock_add_job / jobclock_add_jobs take `debounce` and `debounceMax` as POST /jobs does. As
-- 0023 did for startBy: the validator of 0023 stays, renamed jobclock_job_row_deadlined; the new
-- jobclock_job_row checks the fields, lets the old one do the rest and moves a debounced job's key
-- to debounce_key. jobclock_insert_job_row upserts a debounced job on its key (jobclock_add_jobs
-- already takes that row-by-row path for jobs with a uniqueKey, which debounce needs).
DO $migration$
DECLARE
  s text := quote_ident(current_schema());
  body text;
BEGIN
  EXECUTE replace('ALTER FUNCTION @s@.jobclock_job_row(jsonb, text, text) RENAME TO jobclock_job_row_deadlined', '@s@', s);

  body := $fn$
CREATE FUNCTION @s@.jobclock_job_row(j jsonb, fn text, at text) RETURNS @s@.job
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, @s@, pg_temp
AS $$
DECLARE
  r @s@.job;
  k text;
  v jsonb;
  debounce_ms bigint;
  max_ms bigint;
BEGIN
  IF j IS NULL OR jsonb_typeof(j) <> 'object' THEN
    RETURN @s@.jobclock_job_row_deadlined(j, fn, at); -- raises, saying what a job looks like
  END IF;
  v := j - ARRAY['type', 'args', 'group', 'priority', 'runAt', 'maxAttempts', 'uniqueKey', 'timebox', 'subject', 'submitter', 'traceparent',
                 'startBy', 'debounce', 'debounceMax'];
  IF v <> '{}'::jsonb THEN
    SELECT min(key) INTO k FROM jsonb_object_keys(v) AS key;
    RAISE EXCEPTION '%: % is not a field of a job; the fields are type, args, group, priority, runAt, maxAttempts, uniqueKey, timebox, subject, submitter, traceparent, startBy, debounce, debounceMax', fn, at || k
      USING ERRCODE = 'invalid_parameter_value', COLUMN = k;
  END IF;
  r := @s@.jobclock_job_row_deadlined(j - ARRAY['debounce', 'debounceMax'], fn, at);
  IF coalesce(jsonb_typeof(j -> 'debounceMax'), 'null') <> 'null' AND coalesce(jsonb_typeof(j -> 'debounce'), 'null') = 'null' THEN
    RAISE EXCEPTION '%: %debounceMax needs a debounce', fn, at USING ERRCODE = 'invalid_parameter_value', COLUMN = 'debounceMax';
  END IF;
  IF coalesce(jsonb_typeof(j -> 'debounce'), 'null') = 'null' THEN
    RETURN r;
  END IF;
  BEGIN
    debounce_ms := @s@.jobclock_duration_ms(j -> 'debounce', at || 'debounce');
    max_ms := coalesce(@s@.jobclock_duration_ms(j -> 'debounceMax', at || 'debounceMax'), 10 * debounce_ms);
  EXCEPTION WHEN invalid_parameter_value THEN
    GET STACKED DIAGNOSTICS k = MESSAGE_TEXT;
    RAISE EXCEPTION '%: %', fn, k
      USING ERRCODE = 'invalid_parameter_value', COLUMN = CASE WHEN k LIKE at || 'debounceMax%' THEN 'debounceMax' ELSE 'debounce' END;
  END;
  IF r.unique_key IS NULL THEN
    RAISE EXCEPTION '%: %debounce needs a uniqueKey: the submissions that share it make one job', fn, at
      USING ERRCODE = 'invalid_parameter_value', COLUMN = 'debounce';
  END IF;
  IF j ? 'runAt' THEN
    RAISE EXCEPTION '%: %runAt cannot be given with debounce, which sets it (now + debounce)', fn, at
      USING ERRCODE = 'invalid_parameter_value', COLUMN = 'runAt';
  END IF;
  IF max_ms < debounce_ms THEN
    RAISE EXCEPTION '%: %debounceMax must be at least debounce', fn, at USING ERRCODE = 'invalid_parameter_value', COLUMN = 'debounceMax';
  END IF;
  r.debounce_key := r.unique_key;
  r.unique_key := NULL;
  r.run_at := now() + debounce_ms * interval '1 millisecond';
  r.debounce_until := now() + max_ms * interval '1 millisecond';
  RETURN r;
END;
$$;
$fn$;
  EXECUTE replace(body, '@s@', s);

  body := $fn$
CREATE OR REPLACE FUNCTION @s@.jobclock_insert_job_row(r @s@.job) RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, @s@, pg_temp
AS $$
DECLARE
  new_id bigint;
BEGIN
  IF r.debounce_key IS NULL THEN
    RETURN @s@.jobclock_insert_undebounced_job_row(r);
  END IF;
  -- one statement: a new job, or the queued holder of the key takes the args and the later runAt
  INSERT INTO @s@.job AS x (type, group_, args, subject, submitter, priority, run_at, max_attempts, debounce_key, debounce_until, timebox,
                            traceparent, start_by, created_at, updated_at)
  VALUES (r.type, r.group_, r.args, r.subject, r.submitter, r.priority, r.run_at, r.max_attempts, r.debounce_key, r.debounce_until,
          r.timebox, r.traceparent, r.start_by, now(), now())
  ON CONFLICT (debounce_key) WHERE state = 'queued' AND debounce_until IS NOT NULL
  DO UPDATE SET args = EXCLUDED.args, run_at = least(EXCLUDED.run_at, x.debounce_until), updated_at = EXCLUDED.updated_at
  RETURNING id INTO new_id;
  RETURN new_id;
END;
$$;
$fn$;
  -- the insert of 0023, kept for jobs without debounce
  EXECUTE replace('ALTER FUNCTION @s@.jobclock_insert_job_row(@s@.job) RENAME TO jobclock_insert_undebounced_job_row', '@s@', s);
  EXECUTE replace(body, '@s@', s);

  EXECUTE replace('REVOKE ALL ON FUNCTION @s@.jobclock_job_row(jsonb, text, text) FROM PUBLIC', '@s@', s);
  EXECUTE replace('REVOKE ALL ON FUNCTION @s@.jobclock_insert_job_row(@s@.job) FROM PUBLIC', '@s@', s);
END;
$migration$;
