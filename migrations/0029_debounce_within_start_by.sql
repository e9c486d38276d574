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
