-- jobclock_add_job / jobclock_add_jobs take `traceparent` as POST /jobs does (the column came with
-- 0005, after the functions): a W3C Trace Context that the job keeps and hands to its worker in the
-- lease, so a trace continues from the transaction that enqueued the job into the worker.
--
-- 0004's validator stays, renamed jobclock_job_row_fields; jobclock_job_row checks the fields
-- (the list now names traceparent), validates traceparent and lets the old one do the rest. The
-- two functions that insert rows are replaced to write the column.

DO $migration$
DECLARE
  s text := quote_ident(current_schema());
  body text;
BEGIN
  EXECUTE replace('ALTER FUNCTION @s@.jobclock_job_row(jsonb, text, text) RENAME TO jobclock_job_row_fields', '@s@', s);

  body := $fn$
CREATE FUNCTION @s@.jobclock_job_row(j jsonb, fn text, at text) RETURNS @s@.job
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, @s@, pg_temp
AS $$
DECLARE
  r @s@.job;
  k text;
  v jsonb;
BEGIN
  IF j IS NULL OR jsonb_typeof(j) <> 'object' THEN
    RETURN @s@.jobclock_job_row_fields(j, fn, at); -- raises, saying what a job looks like
  END IF;
  v := j - ARRAY['type', 'args', 'group', 'priority', 'runAt', 'maxAttempts', 'uniqueKey', 'timebox', 'subject', 'submitter', 'traceparent'];
  IF v <> '{}'::jsonb THEN
    SELECT min(key) INTO k FROM jsonb_object_keys(v) AS key;
    RAISE EXCEPTION '%: % is not a field of a job; the fields are type, args, group, priority, runAt, maxAttempts, uniqueKey, timebox, subject, submitter, traceparent', fn, at || k
      USING ERRCODE = 'invalid_parameter_value', COLUMN = k;
  END IF;
  r := @s@.jobclock_job_row_fields(j - 'traceparent', fn, at);
  v := j -> 'traceparent';
  IF v IS NOT NULL AND jsonb_typeof(v) <> 'null' THEN
    IF jsonb_typeof(v) <> 'string'
       OR (v #>> '{}') !~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'
       OR substr(v #>> '{}', 4, 32) = repeat('0', 32)
       OR substr(v #>> '{}', 37, 16) = repeat('0', 16)
       OR left(v #>> '{}', 2) = 'ff' THEN
      RAISE EXCEPTION '%: %traceparent must be W3C Trace Context: 00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>, lower case, ids not all zero; got %', fn, at, v
        USING ERRCODE = 'invalid_parameter_value', COLUMN = 'traceparent';
    END IF;
    r.traceparent := v #>> '{}';
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
    INSERT INTO @s@.job (type, group_, args, subject, submitter, priority, run_at, max_attempts, timebox, traceparent, created_at, updated_at)
    VALUES (r.type, r.group_, r.args, r.subject, r.submitter, r.priority, r.run_at, r.max_attempts, r.timebox, r.traceparent, now(), now())
    RETURNING id INTO new_id;
    RETURN new_id;
  END IF;
  FOR attempt IN 1..5 LOOP
    INSERT INTO @s@.job (type, group_, args, subject, submitter, priority, run_at, max_attempts, unique_key, timebox, traceparent, created_at, updated_at)
    VALUES (r.type, r.group_, r.args, r.subject, r.submitter, r.priority, r.run_at, r.max_attempts, r.unique_key, r.timebox, r.traceparent, now(), now())
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
        INSERT INTO @s@.job (id, type, group_, args, subject, submitter, priority, run_at, max_attempts, timebox, traceparent, created_at, updated_at)
        OVERRIDING SYSTEM VALUE
        SELECT n.id, (n.j).type, (n.j).group_, (n.j).args, (n.j).subject, (n.j).submitter, (n.j).priority, (n.j).run_at,
               (n.j).max_attempts, (n.j).timebox, (n.j).traceparent, now(), now()
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
END;
$migration$;
