-- Flow control: per job type and per group, pause, a concurrency limit and a rate limit, enforced
-- inside the lease statement whatever the number of instances.
--
-- A limit is a set of permit rows that a lease claims with FOR UPDATE SKIP LOCKED: a concurrency
-- of N is N slots (a slot holds the running job that took it), a rate of n per window is n tokens
-- (a token can be used once per window). Claiming a permit is race-free within one statement:
-- when another lease took the row after this statement's snapshot, PostgreSQL re-checks the row's
-- condition on its newest version before locking it, and skips it. So no counter is read stale,
-- no check-then-act happens in JavaScript, and the permit rows of one key stay few (N or n): no
-- counter row updated by every lease of every type.

CREATE TABLE flow_policy (
  kind            text        NOT NULL CHECK (kind IN ('type', 'group')),
  name            text        NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  paused          boolean     NOT NULL DEFAULT false,
  concurrency     integer     CHECK (concurrency >= 1),
  rate_limit      integer     CHECK (rate_limit >= 1),
  rate_window_ms  bigint      CHECK (rate_window_ms >= 1),
  updated_at      timestamptz NOT NULL,
  PRIMARY KEY (kind, name),
  CHECK ((rate_limit IS NULL) = (rate_window_ms IS NULL))
);

-- Slot n of a key is claimable while n <= its policy's concurrency and no job holds it.
-- released_at: when its last job stopped running; the next job that takes the slot does not start
-- before it (the lease's `now` is read before its statement runs, so without this a job's
-- startedAt could fall before the finishedAt of the job whose slot it took).
CREATE TABLE flow_slot (
  kind         text        NOT NULL,
  name         text        NOT NULL,
  n            integer     NOT NULL,
  job_id       bigint,
  released_at  timestamptz,
  PRIMARY KEY (kind, name, n)
) WITH (fillfactor = 70);
CREATE INDEX flow_slot_job_idx ON flow_slot (job_id) WHERE job_id IS NOT NULL;

-- Token n of a key is claimable while n <= its policy's rate_limit and it was last used a whole
-- window ago (or never): at most rate_limit leases begin in any window.
CREATE TABLE flow_token (
  kind     text        NOT NULL,
  name     text        NOT NULL,
  n        integer     NOT NULL,
  used_at  timestamptz,
  PRIMARY KEY (kind, name, n)
) WITH (fillfactor = 70);

-- A job that took slots gives them back the moment it stops running, whichever statement moves it
-- (a report, the reaper, a cancel, a give-back, a bulk action, a policy replace, or SQL by hand).
-- The trigger fires only for jobs that hold slots: every other job pays one boolean test.
ALTER TABLE job ADD COLUMN holds_slot boolean NOT NULL DEFAULT false;

CREATE FUNCTION jobclock_release_slots() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE flow_slot SET job_id = NULL, released_at = coalesce(NEW.finished_at, NEW.updated_at) WHERE job_id = OLD.id;
  NEW.holds_slot := false;
  PERFORM pg_notify('jobclock_jobs', '');
  RETURN NEW;
END;
$$;

CREATE TRIGGER job_release_slots BEFORE UPDATE OF state ON job
  FOR EACH ROW WHEN (OLD.holds_slot AND NEW.state IS DISTINCT FROM 'running')
  EXECUTE FUNCTION jobclock_release_slots();
