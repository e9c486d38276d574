-- What a job's change of state sets off, in one AFTER row trigger instead of four.
--
-- Why: every update of a job row paid for each row trigger on job, fired or not. Four triggers
-- (job_release_slots, job_dependency_ended, job_task_outcome, job_watched_done) had their WHEN
-- clauses evaluated on every row of every lease and report; job_dependency_ended's read
-- OLD.has_dependents, the table's last column, so the old row was taken apart to its end. And
-- job_release_slots was a BEFORE trigger: PostgreSQL locks each row a BEFORE UPDATE row trigger
-- may see before it updates it, so every row a report ended was locked first — one more WAL
-- record (54 bytes) and one more buffer access per job. Together some 6 % of PostgreSQL's CPU per
-- job in the README loop (bench/hot-statements.ts, variants current and one-row-trigger).
--
-- Now one AFTER row trigger decides, on the new row only, whether anything may have to happen:
-- the job holds slots, has dependents, belongs to a periodic task or is watched — and its state
-- changed. has_dependents is only ever set (by the statement that adds dependents, which leaves
-- state alone), so NEW.has_dependents is OLD.has_dependents wherever state changes. The function
-- then does what the four did, in the order they ran.
--
-- The one change of behaviour: a job that stops running through a statement that does not clear
-- holds_slot itself (a cancel, a lease that expires) frees its slots as before, but holds_slot
-- stays true on its row until its next lease sets it again (an AFTER trigger cannot change the
-- row it fires for, and a second UPDATE of the row would fire the job's other triggers again).
-- holds_slot now reads "may hold slots": releasing is idempotent, so a later change of state of
-- such a job, or its deletion, looks for slots it no longer holds and finds none. The report,
-- the common way out of running, clears holds_slot and releases the batch's slots itself, as
-- before.

CREATE FUNCTION jobclock_release_job_slots(p_job_id bigint, p_at timestamptz) RETURNS void
LANGUAGE plpgsql SET enable_seqscan = off AS $$
BEGIN
  UPDATE flow_slot SET job_id = NULL, released_at = p_at WHERE job_id = p_job_id;
  PERFORM pg_notify('jobclock_jobs', '');
END;
$$;

CREATE FUNCTION jobclock_job_state_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  -- flow control: a job that stopped running frees the slots it held
  IF OLD.holds_slot AND NEW.holds_slot AND NEW.state IS DISTINCT FROM 'running' THEN
    PERFORM jobclock_release_job_slots(OLD.id, coalesce(NEW.finished_at, NEW.updated_at));
  END IF;
  -- dependencies: the jobs waiting for this one learn that it ended (settled for the whole
  -- statement by job_dependencies_settle), or that it runs again
  IF OLD.has_dependents
     AND (NEW.state IN ('finished', 'failed', 'dropped', 'cancelled')) <> (OLD.state IN ('finished', 'failed', 'dropped', 'cancelled')) THEN
    IF NEW.state IN ('finished', 'failed', 'dropped', 'cancelled') THEN
      PERFORM set_config('jobclock.ended_dependencies',
        coalesce(nullif(current_setting('jobclock.ended_dependencies', true), ''), '') || NEW.id || ':' || NEW.state || ',', true);
    ELSE
      UPDATE job w SET deps_pending = w.deps_pending + 1
        FROM job_dependency e WHERE e.depends_on = NEW.id AND w.id = e.job_id AND w.state = 'waiting';
    END IF;
  END IF;
  -- a periodic task's health: its run succeeded, or failed for good
  IF NEW.periodic_task_id IS NOT NULL AND NEW.state IN ('finished', 'failed', 'dropped') THEN
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
  END IF;
  -- GET /jobs/{id}?wait: the instances waiting for this job's end are woken
  IF NEW.watched AND NEW.state IN ('finished', 'failed', 'dropped', 'cancelled') THEN
    PERFORM pg_notify('jobclock_job_done', NEW.id::text);
  END IF;
  RETURN NULL;
END;
$$;

REVOKE ALL ON FUNCTION jobclock_release_job_slots(bigint, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobclock_job_state_changed() FROM PUBLIC;

DROP TRIGGER job_release_slots ON job;
DROP TRIGGER job_dependency_ended ON job;
DROP TRIGGER job_task_outcome ON job;
DROP TRIGGER job_watched_done ON job;

CREATE TRIGGER job_state_changed AFTER UPDATE OF state ON job FOR EACH ROW
  WHEN ((NEW.holds_slot OR NEW.has_dependents OR NEW.periodic_task_id IS NOT NULL OR NEW.watched)
        AND NEW.state IS DISTINCT FROM OLD.state)
  EXECUTE FUNCTION jobclock_job_state_changed();

-- Only their triggers called the four functions (an instance of the previous release never does).
DROP FUNCTION jobclock_release_slots();
DROP FUNCTION jobclock_dependency_ended();
DROP FUNCTION jobclock_task_outcome();
DROP FUNCTION jobclock_notify_job_done();
