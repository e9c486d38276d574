-- The statement triggers on updates of job, cheaper when they have nothing to do.
--
-- Why: every UPDATE statement on job (each lease, each report, each heartbeat) ran two PL/pgSQL
-- functions over the rows it changed (the NEW TABLE both triggers share): job_search_on_update,
-- for the search rows of final jobs in ranges already copied, and job_webhook_events, for events
-- the webhooks subscribe to. The first one always ran its INSERT … ON CONFLICT into the
-- partitioned job_search, whose setup alone cost some 30 µs a statement, although the jobs a
-- queue ends are almost never in a copied range; and each function call is another ~10 µs. A
-- report of one job cost PostgreSQL ~580 µs of CPU, 60 of them these two triggers.
--
-- A third statement trigger, job_dependencies_settle, ran on every update of state to settle the
-- dependents of the jobs that ended (noted by the row trigger in jobclock.ended_dependencies):
-- another function call, almost always to find nothing noted. And the report released the
-- permits of its jobs through jobclock_release_permits, a SQL function with a SET clause, which
-- PostgreSQL parses and plans again in every statement that calls it (4 % of a one-job report).
--
-- Now one statement trigger does the three, each part first checking whether it has anything to
-- do: the dependencies part whether anything was noted, the search part whether a final job below
-- the copied ranges' top is among the rows, the webhook part (as before) whether any webhook
-- subscribes to job events. They run in the order the three triggers ran (by name). And the
-- permit release is PL/pgSQL, whose plan a connection keeps. A one-job report statement cost
-- PostgreSQL 4–8 % less CPU in lockstep with pg-boss 12 (bench/hot-statements.ts,
-- HOT_REPORT_EACH=1, variant before-0033).
--
-- Fixed on the way: the webhook part took a final row whose finished_at equals its updated_at for
-- a job that had just ended. An update of an ended row that ends nothing — marking it as depended
-- on (a new job naming it in `after`), or detaching it from a deleted periodic task (the foreign
-- key sets periodic_task_id to NULL) — sent it to the webhooks a second time. The trigger now sees
-- the rows as they were too (OLD TABLE; no cost that bench/hot-statements.ts could tell apart from
-- its noise), and a job ends in the statement whose update moves it into a final state.

-- the body of jobclock_dependencies_settle (migration 0026), as a function the trigger calls
CREATE FUNCTION jobclock_settle_dependencies() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  noted text := current_setting('jobclock.ended_dependencies', true);
  ended bigint[];
  bad bigint[];
  at timestamptz;
  released integer;
BEGIN
  IF noted IS NULL OR noted = '' THEN
    RETURN;
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
END;
$$;

CREATE OR REPLACE FUNCTION jobclock_release_permits(ids bigint[], at timestamptz) RETURNS bigint
LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
  k bigint;
BEGIN
  UPDATE flow_slot s SET job_id = NULL, released_at = at WHERE s.job_id = ANY (ids);
  GET DIAGNOSTICS k = ROW_COUNT;
  RETURN k;
END;
$$;

CREATE FUNCTION jobclock_job_updated() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  top bigint := (SELECT hi FROM job_search_sealed ORDER BY lo DESC LIMIT 1);
  k bigint;
BEGIN
  -- dependencies: the jobs waiting for the ones that ended are settled (jobclock_job_state_changed notes them)
  IF coalesce(current_setting('jobclock.ended_dependencies', true), '') <> '' THEN
    PERFORM jobclock_settle_dependencies();
  END IF;
  -- search: a job in a range already copied into job_search keeps its search row current there
  IF top IS NOT NULL
     AND EXISTS (SELECT 1 FROM jobclock_new n WHERE n.id < top AND n.state IN ('finished', 'failed', 'dropped', 'cancelled')) THEN
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
  END IF;
  -- webhooks: one outbox row per event kind and set of matching subscriptions (migration 0028), for
  -- the jobs this statement moved into a final state
  IF EXISTS (SELECT 1 FROM webhook WHERE events && '{job.finished,job.failed,job.dropped,job.cancelled}'::text[]) THEN
    INSERT INTO webhook_event (event, subjects, webhook_ids, at)
      SELECT m.event, array_agg(m.id::text ORDER BY m.id), m.webhook_ids, m.finished_at
        FROM (SELECT n.id, n.finished_at, e.event, array_agg(w.id ORDER BY w.id) AS webhook_ids
                FROM jobclock_new n
                JOIN jobclock_old o ON o.id = n.id
               CROSS JOIN LATERAL (SELECT 'job.' || n.state AS event) e
                JOIN webhook w ON e.event = ANY (w.events)
                              AND (w.filter_type IS NULL OR w.filter_type = n.type)
                              AND (w.filter_group IS NULL OR w.filter_group = n.group_)
                              AND (w.filter_task IS NULL OR w.filter_task = n.periodic_task_id)
               WHERE n.state IN ('finished', 'failed', 'dropped', 'cancelled') AND n.state IS DISTINCT FROM o.state
               GROUP BY n.id, n.finished_at, e.event) m
       GROUP BY m.event, m.webhook_ids, m.finished_at;
    GET DIAGNOSTICS k = ROW_COUNT;
    IF k > 0 THEN
      PERFORM pg_notify('jobclock_deliveries', '');
    END IF;
  END IF;
  RETURN NULL;
END;
$$;

REVOKE ALL ON FUNCTION jobclock_job_updated() FROM PUBLIC;
REVOKE ALL ON FUNCTION jobclock_settle_dependencies() FROM PUBLIC;

DROP TRIGGER job_dependencies_settle ON job;
DROP TRIGGER job_search_on_update ON job;
DROP TRIGGER job_webhook_events ON job;
CREATE TRIGGER job_updated AFTER UPDATE ON job REFERENCING OLD TABLE AS jobclock_old NEW TABLE AS jobclock_new
  FOR EACH STATEMENT EXECUTE FUNCTION jobclock_job_updated();

-- Only their triggers called the three functions.
DROP FUNCTION jobclock_dependencies_settle();
DROP FUNCTION jobclock_search_on_update();
DROP FUNCTION jobclock_webhook_job_events();
