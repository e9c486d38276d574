-- Jobs that wait for other jobs: `after`, `onDependencyFailure`, results handed down.
--
-- A job with unfinished dependencies is `waiting`, a state the lease's partial indexes (all on
-- state = 'queued') never contain, so no lease scans it. It becomes `queued` in the transaction
-- that ends its last dependency, through the trigger below; jobs nobody depends on pay one test of
-- its WHEN clause (has_dependents is false), as watched jobs do for migration 0023's trigger.

ALTER TABLE job DROP CONSTRAINT job_state_check;
ALTER TABLE job ADD CONSTRAINT job_state_check
  CHECK (state IN ('waiting', 'queued', 'running', 'finished', 'failed', 'dropped', 'cancelled')) NOT VALID;
ALTER TABLE job VALIDATE CONSTRAINT job_state_check;

ALTER TABLE job
  -- the jobs this one runs after (null for a job without dependencies: the lease reads their
  -- results only for jobs that have some)
  ADD COLUMN after_ids bigint[],
  -- while waiting: how many of them have not ended yet
  ADD COLUMN deps_pending integer,
  -- onDependencyFailure "run": a dependency that ends failed, dropped or cancelled does not cancel it
  ADD COLUMN dependency_failure_runs boolean NOT NULL DEFAULT false,
  -- some job runs after this one: its end is looked at by the trigger below
  ADD COLUMN has_dependents boolean NOT NULL DEFAULT false;

-- Searches walk the open jobs one state at a time through partial indexes (repositories/job/
-- search.ts): the waiting ones too. Empty for jobs without dependencies.
CREATE INDEX job_waiting_id_idx ON job (id) WHERE state = 'waiting';

-- The edges, looked up from the dependency's side (its dependents).
CREATE TABLE job_dependency (
  depends_on bigint NOT NULL,
  job_id     bigint NOT NULL,
  PRIMARY KEY (depends_on, job_id)
);

-- A dependency that ends: its waiting dependents count it; one that ended failed, dropped or
-- cancelled cancels, down the graph, every waiting dependent without onDependencyFailure "run"
-- (one statement for the whole cascade, so a long chain nests no triggers). A dependency that
-- starts again (a retry of a final job) is counted again by its still-waiting dependents, so a
-- waiting job's deps_pending is always the number of its dependencies that are not final.
--
-- The row trigger, which only jobs with dependents fire, notes the ended ones in a setting local
-- to the transaction; the statement trigger then settles all of them at once, locking the
-- dependents in id order: two reports ending dependencies of the same jobs lock them in the same
-- order, where one trigger call per ended row would lock them in the order of each report, and
-- batches of reports over a dense graph deadlocked. Statements that end no such job pay one read
-- of the setting (heartbeats, which set no state, not even that). The time is the ending statement's (updated_at), which jobclock sets from its clock.
CREATE FUNCTION jobclock_dependency_ended() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.state IN ('finished', 'failed', 'dropped', 'cancelled') THEN
    PERFORM set_config('jobclock.ended_dependencies',
      coalesce(nullif(current_setting('jobclock.ended_dependencies', true), ''), '') || NEW.id || ':' || NEW.state || ',', true);
  ELSE
    UPDATE job w SET deps_pending = w.deps_pending + 1
      FROM job_dependency e WHERE e.depends_on = NEW.id AND w.id = e.job_id AND w.state = 'waiting';
  END IF;
  RETURN NULL;
END;
$$;

CREATE FUNCTION jobclock_dependencies_settle() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  noted text := current_setting('jobclock.ended_dependencies', true);
  ended bigint[];
  bad bigint[];
  at timestamptz;
  released integer;
BEGIN
  IF noted IS NULL OR noted = '' THEN
    RETURN NULL;
  END IF;
  PERFORM set_config('jobclock.ended_dependencies', '', true);
  SELECT array_agg(split_part(x, ':', 1)::bigint), array_agg(split_part(x, ':', 1)::bigint) FILTER (WHERE split_part(x, ':', 2) <> 'finished')
    INTO ended, bad
    FROM unnest(string_to_array(rtrim(noted, ','), ',')) AS x;
  SELECT max(updated_at) INTO at FROM job WHERE id = ANY (ended);
  IF bad IS NOT NULL THEN
    WITH RECURSIVE doomed(id) AS (
      SELECT e.job_id FROM job_dependency e JOIN job w ON w.id = e.job_id
      WHERE e.depends_on = ANY (bad) AND w.state = 'waiting' AND NOT w.dependency_failure_runs
      UNION
      SELECT e.job_id FROM doomed d JOIN job_dependency e ON e.depends_on = d.id JOIN job w ON w.id = e.job_id
      WHERE w.state = 'waiting' AND NOT w.dependency_failure_runs
    ),
    locked AS MATERIALIZED (
      SELECT w.id FROM job w WHERE w.id IN (SELECT id FROM doomed) AND w.state = 'waiting' ORDER BY w.id FOR UPDATE
    ),
    gone AS (
      UPDATE job w SET state = 'cancelled', deps_pending = NULL, finished_at = at, updated_at = at
      FROM locked l WHERE w.id = l.id
      RETURNING w.id
    )
    INSERT INTO job_event (job_id, at, kind, detail)
    SELECT g.id, at, 'cancelled', jsonb_build_object('from', 'waiting', 'reason', 'dependency-failed')
    FROM gone g;
  END IF;
  WITH counts AS MATERIALIZED (
    SELECT e.job_id, count(*)::int AS n FROM job_dependency e WHERE e.depends_on = ANY (ended) GROUP BY e.job_id
  ),
  locked AS MATERIALIZED (
    SELECT w.id, c.n FROM job w JOIN counts c ON c.job_id = w.id WHERE w.state = 'waiting' ORDER BY w.id FOR UPDATE OF w
  ),
  upd AS (
    UPDATE job w SET deps_pending = w.deps_pending - l.n,
                     state = CASE WHEN w.deps_pending <= l.n THEN 'queued' ELSE 'waiting' END,
                     updated_at = at
    FROM locked l WHERE w.id = l.id AND w.state = 'waiting'
    RETURNING w.state
  )
  SELECT count(*) INTO released FROM upd WHERE state = 'queued';
  IF released > 0 THEN
    PERFORM pg_notify('jobclock_jobs', '');
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER job_dependency_ended AFTER UPDATE OF state ON job FOR EACH ROW
  WHEN (OLD.has_dependents AND NEW.state IS DISTINCT FROM OLD.state
        AND (NEW.state IN ('finished', 'failed', 'dropped', 'cancelled')) <> (OLD.state IN ('finished', 'failed', 'dropped', 'cancelled')))
  EXECUTE FUNCTION jobclock_dependency_ended();

CREATE TRIGGER job_dependencies_settle AFTER UPDATE OF state ON job FOR EACH STATEMENT
  EXECUTE FUNCTION jobclock_dependencies_settle();
