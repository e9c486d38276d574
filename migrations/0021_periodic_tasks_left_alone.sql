-- Periodic tasks that can be left alone: retries within a slot, a catch-up window, an end, health
-- with a dead man's switch, and the run ledger's records of slots that got no job.

ALTER TABLE periodic_task
  -- attempts of each run; a retry never outlives its slot (dropped with reason next-run-due)
  ADD COLUMN max_attempts integer NOT NULL DEFAULT 1 CHECK (max_attempts BETWEEN 1 AND 100),
  -- a slot older than this when the scheduler reaches it is missed, whatever the misfire policy
  ADD COLUMN catch_up_window bigint CHECK (catch_up_window > 0),
  -- no slot at or after it
  ADD COLUMN end_at timestamptz,
  -- overdue once no run has finished for this long after a slot came due
  ADD COLUMN alert_after bigint CHECK (alert_after > 0),
  -- health, kept where outcomes are written (the trigger below) rather than computed from history
  ADD COLUMN last_success_at timestamptz,
  ADD COLUMN last_failure_at timestamptz,
  ADD COLUMN consecutive_failures integer NOT NULL DEFAULT 0 CHECK (consecutive_failures >= 0),
  -- the moment the task becomes overdue if no run finishes first: the first slot due after the
  -- last success (or after creation) + alert_after. Written by the API and the scheduler, which
  -- know the schedule, and by the outcome trigger below when a run finishes
  ADD COLUMN overdue_at timestamptz;

-- GET /periodic-tasks?health=...: the few tasks in each state, without a look at the rest.
CREATE INDEX periodic_task_failing_idx ON periodic_task (id) WHERE consecutive_failures > 0;
CREATE INDEX periodic_task_overdue_idx ON periodic_task (overdue_at, id) WHERE overdue_at IS NOT NULL;
CREATE INDEX periodic_task_disabled_idx ON periodic_task (id) WHERE NOT enabled;

-- Slots that got no job (skipped under forbid, missed after downtime or outside the catch-up
-- window), and jobs submitted by a trigger (not a slot). Written in the scheduler's own
-- transaction when it decides; a run of missed slots is one row with the schedule it was read
-- from, so that a year away costs one row, and the ledger expands it one page at a time.
CREATE TABLE periodic_slot (
  task_id     text        NOT NULL REFERENCES periodic_task (id) ON DELETE CASCADE,
  -- the first slot of the row (the submission time for a trigger)
  slot        timestamptz NOT NULL,
  -- the last slot of the row (= slot for one slot)
  last_slot   timestamptz NOT NULL,
  slots       integer     NOT NULL DEFAULT 1 CHECK (slots >= 1),
  outcome     text        NOT NULL CHECK (outcome IN ('skipped', 'missed', 'triggered')),
  -- skipped: the open job that blocked the slot; triggered: the job submitted
  job_id      bigint,
  -- the schedule the slots of a row of more than one slot were read from
  timer       text,
  timezone    text,
  anchor      timestamptz,
  first_run_at timestamptz,
  recorded_at timestamptz NOT NULL,
  PRIMARY KEY (task_id, slot, outcome),
  CHECK (last_slot >= slot)
);
-- retention deletes records with the jobs of their time
CREATE INDEX periodic_slot_recorded_idx ON periodic_slot (recorded_at);

-- Health is written where an outcome is written, whoever writes it (a report, the lease reaper,
-- the lease's drop check, the scheduler, a cancel): a row trigger that fires only for jobs of
-- periodic tasks that become final, so other jobs pay one test of the WHEN clause and nothing more.
-- A run that finished resets the count of failures; one that failed, timed out or was dropped adds
-- one; a cancelled run (by a user, or replaced) changes nothing.
CREATE FUNCTION jobclock_task_outcome() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.state = 'finished' THEN
    -- the first slot due after this success is nextrun when that lies ahead (no slot between the
    -- scheduler's last look and nextrun); when it does not (the scheduler is behind), the
    -- scheduler sets overdue_at as it reaches the task
    UPDATE periodic_task
       SET last_success_at = greatest(last_success_at, NEW.finished_at), consecutive_failures = 0,
           overdue_at = CASE WHEN alert_after IS NOT NULL AND nextrun > NEW.finished_at
                             THEN nextrun + make_interval(secs => alert_after / 1000.0) END
     WHERE id = NEW.periodic_task_id;
  ELSE
    UPDATE periodic_task
       SET last_failure_at = greatest(last_failure_at, coalesce(NEW.finished_at, NEW.updated_at)),
           consecutive_failures = consecutive_failures + 1
     WHERE id = NEW.periodic_task_id;
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER job_task_outcome AFTER UPDATE OF state ON job
  FOR EACH ROW
  WHEN (NEW.periodic_task_id IS NOT NULL AND NEW.state IS DISTINCT FROM OLD.state
        AND NEW.state IN ('finished', 'failed', 'dropped'))
  EXECUTE FUNCTION jobclock_task_outcome();
