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

-- Defaults per job type (PATCH /types/{type} defaults): applied to new jobs of the type that do not
-- say otherwise, over HTTP and in jobclock_add_job(s) alike; `lease` to leases that name none.
CREATE TABLE job_type_defaults (
  type         text PRIMARY KEY CHECK (length(type) BETWEEN 1 AND 200),
  max_attempts integer CHECK (max_attempts >= 1),
  timebox      bigint CHECK (timebox > 0),
  lease        bigint CHECK (lease > 0),
  priority     integer,
  -- startBy = creation + this
  start_within bigint CHECK (start_within > 0),
  updated_at   timestamptz NOT NULL
);

-- jobclock_add_job / jobclock_add_jobs take `startBy` as POST /jobs does. As 0011 did for
-- traceparent: the validator of 0011 stays, renamed jobclock_job_row_traced; jobclock_job_row checks
-- the fields (the list now names startBy), validates startBy and lets the old one do the rest. The
-- two functions that insert rows are replaced to write the column.
DO $migration$
DECLARE
  s text := quote_ident(current_schema());
  body text;
BEGIN
  EXECUTE replace('ALTER FUNCTION @s@.jobclock_job_row(jsonb, text, text) RENAME TO jobclock_job_row_traced', '@s@', s);

  body := $fn$
CREATE FUNCTION @s@.jobclock_job_row(j jsonb, fn text, at text) RETURNS @s@.job
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, @s@, pg_temp
AS $$
DECLARE
  r @s@.job;
  k text;
  v jsonb;
  ts text;
  dflt @s@.job_type_defaults;
BEGIN
  IF j IS NULL OR jsonb_typeof(j) <> 'object' THEN
    RETURN @s@.jobclock_job_row_traced(j, fn, at); -- raises, saying what a job looks like
  END IF;
  v := j - ARRAY['type', 'args', 'group', 'priority', 'runAt', 'maxAttempts', 'uniqueKey', 'timebox', 'subject', 'submitter', 'traceparent',
                 'startBy'];
  IF v <> '{}'::jsonb THEN
    SELECT min(key) INTO k FROM jsonb_object_keys(v) AS key;
    RAISE EXCEPTION '%: % is not a field of a job; the fields are type, args, group, priority, runAt, maxAttempts, uniqueKey, timebox, subject, submitter, traceparent, startBy', fn, at || k
      USING ERRCODE = 'invalid_parameter_value', COLUMN = k;
  END IF;
  r := @s@.jobclock_job_row_traced(j - 'startBy', fn, at);
  -- the type's defaults, for the fields the job does not give
  SELECT d.* INTO dflt FROM @s@.job_type_defaults d WHERE d.type = r.type;
  IF FOUND THEN
    IF NOT j ? 'maxAttempts' AND dflt.max_attempts IS NOT NULL THEN r.max_attempts := dflt.max_attempts; END IF;
    IF NOT j ? 'timebox' AND dflt.timebox IS NOT NULL THEN r.timebox := dflt.timebox; END IF;
    IF NOT j ? 'priority' AND dflt.priority IS NOT NULL THEN r.priority := dflt.priority; END IF;
    IF NOT j ? 'startBy' AND dflt.start_within IS NOT NULL THEN
      r.start_by := now() + dflt.start_within * interval '1 millisecond';
    END IF;
  END IF;
  v := j -> 'startBy';
  IF v IS NOT NULL AND jsonb_typeof(v) <> 'null' THEN
    ts := v #>> '{}';
    IF jsonb_typeof(v) <> 'string'
       OR ts !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?([Zz]|[+-][0-9]{2}(:?[0-9]{2})?)$' THEN
      RAISE EXCEPTION '%: %startBy must be an ISO 8601 timestamp with Z or an offset, like 2026-11-20T09:00:00Z, got %', fn, at, v
        USING ERRCODE = 'invalid_parameter_value', COLUMN = 'startBy';
    END IF;
    BEGIN
      r.start_by := ts::timestamptz;
    EXCEPTION WHEN data_exception THEN
      RAISE EXCEPTION '%: %startBy % is not a valid date and time', fn, at, v
        USING ERRCODE = 'invalid_parameter_value', COLUMN = 'startBy';
    END;
  END IF;
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
  IF r.unique_key IS NULL THEN
    INSERT INTO @s@.job (type, group_, args, subject, submitter, priority, run_at, max_attempts, timebox, traceparent, start_by, created_at, updated_at)
    VALUES (r.type, r.group_, r.args, r.subject, r.submitter, r.priority, r.run_at, r.max_attempts, r.timebox, r.traceparent, r.start_by, now(), now())
    RETURNING id INTO new_id;
    RETURN new_id;
  END IF;
  FOR attempt IN 1..5 LOOP
    INSERT INTO @s@.job (type, group_, args, subject, submitter, priority, run_at, max_attempts, unique_key, timebox, traceparent, start_by,
                         created_at, updated_at)
    VALUES (r.type, r.group_, r.args, r.subject, r.submitter, r.priority, r.run_at, r.max_attempts, r.unique_key, r.timebox, r.traceparent,
            r.start_by, now(), now())
    ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND state IN ('queued', 'running') DO NOTHING
    RETURNING id INTO new_id;
    IF new_id IS NOT NULL THEN
      RETURN new_id;
    END IF;
    SELECT id INTO new_id FROM @s@.job WHERE unique_key = r.unique_key AND state IN ('queued', 'running');
    IF new_id IS NOT NULL THEN
      RETURN new_id;
    END IF;
    -- the holder finished between the two statements: insert again
  END LOOP;
  RAISE EXCEPTION 'uniqueKey "%" changed hands too often to settle; retry the transaction', r.unique_key
    USING ERRCODE = 'serialization_failure';
END;
$$;
$fn$;
  EXECUTE replace(body, '@s@', s);

  body := $fn$
CREATE OR REPLACE FUNCTION @s@.jobclock_add_jobs(jobs jsonb)
RETURNS SETOF bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, @s@, pg_temp
AS $$
DECLARE
  elem jsonb;
  pos bigint;
BEGIN
  IF jobs IS NULL OR jsonb_typeof(jobs) <> 'array' THEN
    RAISE EXCEPTION 'jobclock_add_jobs: jobs must be a JSON array of job objects like [{"type": "mail.send"}], got %', coalesce(jobs::text, 'NULL')
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF NOT jsonb_path_exists(jobs, '$[*] ? (@.uniqueKey.type() == "string")') THEN
    RETURN QUERY
      WITH input AS MATERIALIZED (
        SELECT t.ord, @s@.jobclock_job_row(t.e, 'jobclock_add_jobs', 'jobs[' || (t.ord - 1) || '].') AS j
        FROM jsonb_array_elements(jobs) WITH ORDINALITY AS t(e, ord)
      ),
      numbered AS MATERIALIZED (
        SELECT nextval(pg_get_serial_sequence('@s@.job', 'id')::regclass) AS id, i.ord, i.j
        FROM (SELECT * FROM input ORDER BY ord) AS i
      ),
      ins AS (
        INSERT INTO @s@.job (id, type, group_, args, subject, submitter, priority, run_at, max_attempts, timebox, traceparent, start_by,
                             created_at, updated_at)
        OVERRIDING SYSTEM VALUE
        SELECT n.id, (n.j).type, (n.j).group_, (n.j).args, (n.j).subject, (n.j).submitter, (n.j).priority, (n.j).run_at,
               (n.j).max_attempts, (n.j).timebox, (n.j).traceparent, (n.j).start_by, now(), now()
        FROM numbered AS n ORDER BY n.ord
      )
      SELECT n.id FROM numbered AS n ORDER BY n.ord;
    RETURN;
  END IF;
  -- Validate every entry before writing any, then insert in order.
  PERFORM @s@.jobclock_job_row(t.e, 'jobclock_add_jobs', 'jobs[' || (t.ord - 1) || '].')
    FROM jsonb_array_elements(jobs) WITH ORDINALITY AS t(e, ord);
  FOR elem, pos IN SELECT t.e, t.ord FROM jsonb_array_elements(jobs) WITH ORDINALITY AS t(e, ord) ORDER BY t.ord LOOP
    RETURN NEXT @s@.jobclock_insert_job_row(@s@.jobclock_job_row(elem, 'jobclock_add_jobs', 'jobs[' || (pos - 1) || '].'));
  END LOOP;
END;
$$;
$fn$;
  EXECUTE replace(body, '@s@', s);

  -- a new function may be executed by PUBLIC until revoked; the renamed one keeps its revocation
  EXECUTE replace('REVOKE ALL ON FUNCTION @s@.jobclock_job_row(jsonb, text, text) FROM PUBLIC', '@s@', s);
  EXECUTE replace('REVOKE ALL ON FUNCTION @s@.jobclock_notify_job_done() FROM PUBLIC', '@s@', s);
END;
$migration$;
