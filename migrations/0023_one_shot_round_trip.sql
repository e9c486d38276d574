-- One-shot jobs, the whole round trip: checkpoints, start deadlines, waiting for a job's end.

ALTER TABLE job
  -- the state a worker saved (heartbeat, release, report) for the job's next attempt
  ADD COLUMN checkpoint jsonb,
  -- not leased at or after this moment: dropped (reason expired) by the lease or the reaper
  ADD COLUMN start_by timestamptz,
  -- someone waits for the job's end (GET /jobs/{id}?wait): the trigger below tells them
  ADD COLUMN watched boolean NOT NULL DEFAULT false;

-- The reaper's tidy-up of expired jobs nobody tried to lease: an index of the few that carry a start
-- deadline, empty for every other job.
CREATE INDEX job_start_by_idx ON job (start_by) WHERE state = 'queued' AND start_by IS NOT NULL;

-- uniqueFor: a uniqueKey also matches final jobs created within the window; only jobs with a key
-- are in this index.
CREATE INDEX job_unique_key_created_idx ON job (unique_key, created_at DESC) WHERE unique_key IS NOT NULL;

-- A watched job that ends notifies the instances, whoever ended it (a report, the reaper, a
-- cancel, the lease's drop). Other jobs pay one test of the WHEN clause.
CREATE FUNCTION jobclock_notify_job_done() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('jobclock_job_done', NEW.id::text);
  RETURN NULL;
END;
$$;

CREATE TRIGGER job_watched_done AFTER UPDATE OF state ON job FOR EACH ROW
  WHEN (NEW.watched AND NEW.state IS DISTINCT FROM OLD.state AND NEW.state IN ('finished', 'failed', 'dropped', 'cancelled'))
  EXECUTE FUNCTION jobclock_notify_job_done();
