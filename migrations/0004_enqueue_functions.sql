-- Enqueueing inside the caller's own transaction (API.md): jobclock_add_job and jobclock_add_jobs.
-- A job added this way exists exactly when the caller's transaction commits; the statement-level
-- INSERT trigger on job (0001) sends the wake-up NOTIFY, which PostgreSQL delivers at commit only.
--
-- Validation is that of POST /jobs: a bad argument raises SQLSTATE 22023 (invalid_parameter_value)
-- with a message naming the field, before anything is written, and the caller's transaction aborts.
-- Durations (timebox) are a number of milliseconds or a string as the HTTP API takes them: Go style
-- (500ms, 30s, 1h30m, 2d) or ISO 8601 (PT30S, P1DT2H, P1W). runAt is an ISO 8601 timestamp string
-- with Z or an offset, which is also what to_jsonb(timestamptz) writes.
--
-- The functions run as their owner (SECURITY DEFINER), so a role needs only EXECUTE on them, no
-- rights on the tables. Their search_path is pinned to pg_catalog, the schema this migration runs
-- in, then pg_temp (last, so a caller's temporary objects can never shadow anything), and every
-- table is written schema-qualified: the bodies are created below with the schema filled in.

DO $migration$
DECLARE
  s text := quote_ident(current_schema());
  body text;
BEGIN
  -- Milliseconds of a timebox: a JSON number of ms or a duration string; NULL for JSON null.
  body := $fn$
CREATE FUNCTION @s@.jobclock_duration_ms(value jsonb, field text) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, @s@, pg_temp
AS $$
DECLARE
  max_ms constant numeric := 3153600000000; -- 36500d, as MAX_DURATION_MS
  txt text;
  m text[];
  ms numeric := 0;
BEGIN
  IF value IS NULL OR jsonb_typeof(value) = 'null' THEN
    RETURN NULL;
  END IF;
  IF jsonb_typeof(value) = 'number' THEN
    ms := value::numeric;
    IF ms <> trunc(ms) OR ms < 1 OR ms > max_ms THEN
      RAISE EXCEPTION '% must be a whole number of milliseconds from 1 to %, got %', field, max_ms, value
        USING ERRCODE = 'invalid_parameter_value', COLUMN = 'timebox';
    END IF;
    RETURN ms::bigint;
  END IF;
  IF jsonb_typeof(value) <> 'string' THEN
    RAISE EXCEPTION '% must be a duration like "30s", "1h30m" or "PT30S", or a number of milliseconds, got %', field, value
      USING ERRCODE = 'invalid_parameter_value', COLUMN = 'timebox';
  END IF;
  txt := btrim(value #>> '{}');
  IF txt LIKE '-%' THEN
    RAISE EXCEPTION '% "%" must not be negative', field, txt USING ERRCODE = 'invalid_parameter_value', COLUMN = 'timebox';
  END IF;
  IF txt LIKE '+%' THEN
    txt := substr(txt, 2);
  END IF;
  IF txt ~* '^P' THEN
    m := regexp_match(txt, '^P(?:([0-9]+(?:[.,][0-9]+)?)W)?(?:([0-9]+(?:[.,][0-9]+)?)D)?(?:T(?:([0-9]+(?:[.,][0-9]+)?)H)?(?:([0-9]+(?:[.,][0-9]+)?)M)?(?:([0-9]+(?:[.,][0-9]+)?)S)?)?$', 'i');
    IF m IS NULL OR txt ~* '^PT?$' OR txt ~* 'T$' THEN
      RAISE EXCEPTION '% "%" is not an ISO 8601 duration of weeks, days, hours, minutes and seconds (years and months have no fixed length), like PT30S or P1DT2H', field, txt
        USING ERRCODE = 'invalid_parameter_value', COLUMN = 'timebox';
    END IF;
    ms := coalesce(replace(m[1], ',', '.')::numeric, 0) * 604800000
        + coalesce(replace(m[2], ',', '.')::numeric, 0) * 86400000
        + coalesce(replace(m[3], ',', '.')::numeric, 0) * 3600000
        + coalesce(replace(m[4], ',', '.')::numeric, 0) * 60000
        + coalesce(replace(m[5], ',', '.')::numeric, 0) * 1000;
  ELSIF txt !~ '^(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ms|s|m|h|d))+$' THEN
    RAISE EXCEPTION '% "%" is not a duration; write a number and a unit (ms, s, m, h, d) like "30s" or "1h30m", ISO 8601 like "PT30S", or a number of milliseconds', field, txt
      USING ERRCODE = 'invalid_parameter_value', COLUMN = 'timebox';
  ELSE
    SELECT sum(p[1]::numeric * CASE p[2] WHEN 'ms' THEN 1 WHEN 's' THEN 1000 WHEN 'm' THEN 60000 WHEN 'h' THEN 3600000 ELSE 86400000 END)
      INTO ms
      FROM regexp_matches(txt, '([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ms|s|m|h|d)', 'g') AS p;
  END IF;
  IF ms <> round(ms) THEN
    RAISE EXCEPTION '% "%" is not a whole number of milliseconds', field, txt USING ERRCODE = 'invalid_parameter_value', COLUMN = 'timebox';
  END IF;
  IF ms < 1 OR ms > max_ms THEN
    RAISE EXCEPTION '% must be from 1ms to 36500d, got "%"', field, txt USING ERRCODE = 'invalid_parameter_value', COLUMN = 'timebox';
  END IF;
  RETURN ms::bigint;
END;
$$;
$fn$;
  EXECUTE replace(body, '@s@', s);

  -- One POST /jobs body, validated, as a job row (not inserted). `at` prefixes field names in
  -- messages ("jobs[3]." or "options."); `fn` names the function the caller called.
  body := $fn$
CREATE FUNCTION @s@.jobclock_job_row(j jsonb, fn text, at text) RETURNS @s@.job
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, @s@, pg_temp
AS $$
DECLARE
  r @s@.job;
  k text;
  v jsonb;
  n numeric;
  ts text;
BEGIN
  IF j IS NULL OR jsonb_typeof(j) <> 'object' THEN
    RAISE EXCEPTION '%: % must be a JSON object like {"type": "mail.send"}, got %', fn, coalesce(nullif(rtrim(at, '.'), ''), 'the job'), coalesce(j::text, 'NULL')
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  v := j - ARRAY['type', 'args', 'group', 'priority', 'runAt', 'maxAttempts', 'uniqueKey', 'timebox', 'subject', 'submitter'];
  IF v <> '{}'::jsonb THEN
    SELECT min(key) INTO k FROM jsonb_object_keys(v) AS key;
    RAISE EXCEPTION '%: % is not a field of a job; the fields are type, args, group, priority, runAt, maxAttempts, uniqueKey, timebox, subject, submitter', fn, at || k
      USING ERRCODE = 'invalid_parameter_value', COLUMN = k;
  END IF;

  v := j -> 'type';
  IF v IS NULL OR jsonb_typeof(v) <> 'string' THEN
    RAISE EXCEPTION '%: %type is required and must be a string, got %', fn, at, coalesce(v::text, 'nothing')
      USING ERRCODE = 'invalid_parameter_value', COLUMN = 'type';
  END IF;
  r.type := v #>> '{}';
  IF length(r.type) NOT BETWEEN 1 AND 200 THEN
    RAISE EXCEPTION '%: %type must be 1 to 200 characters, got %', fn, at, length(r.type)
      USING ERRCODE = 'invalid_parameter_value', COLUMN = 'type';
  END IF;

  r.args := j -> 'args';
  IF jsonb_typeof(r.args) = 'null' THEN
    r.args := NULL;
  END IF;

  v := j -> 'group';
  IF v IS NULL THEN
    r.group_ := 'default';
  ELSIF jsonb_typeof(v) <> 'string' OR length(v #>> '{}') NOT BETWEEN 1 AND 200 THEN
    RAISE EXCEPTION '%: %group must be a string of 1 to 200 characters, got %', fn, at, v
      USING ERRCODE = 'invalid_parameter_value', COLUMN = 'group';
  ELSE
    r.group_ := v #>> '{}';
  END IF;

  v := j -> 'priority';
  IF v IS NULL THEN
    r.priority := 0;
  ELSE
    IF jsonb_typeof(v) = 'number' THEN n := v::numeric; END IF;
    IF jsonb_typeof(v) <> 'number' OR n <> trunc(n) OR n NOT BETWEEN -2147483648 AND 2147483647 THEN
      RAISE EXCEPTION '%: %priority must be a whole number from -2147483648 to 2147483647, got %', fn, at, v
        USING ERRCODE = 'invalid_parameter_value', COLUMN = 'priority';
    END IF;
    r.priority := n::integer;
  END IF;

  v := j -> 'runAt';
  IF v IS NULL THEN
    r.run_at := now();
  ELSE
    ts := v #>> '{}';
    IF jsonb_typeof(v) <> 'string'
       OR ts !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?([Zz]|[+-][0-9]{2}(:?[0-9]{2})?)$' THEN
      RAISE EXCEPTION '%: %runAt must be an ISO 8601 timestamp with Z or an offset, like 2026-11-20T09:00:00Z, got %', fn, at, v
        USING ERRCODE = 'invalid_parameter_value', COLUMN = 'runAt';
    END IF;
    BEGIN
      r.run_at := ts::timestamptz;
    EXCEPTION WHEN data_exception THEN
      RAISE EXCEPTION '%: %runAt % is not a valid date and time', fn, at, v
        USING ERRCODE = 'invalid_parameter_value', COLUMN = 'runAt';
    END;
  END IF;

  v := j -> 'maxAttempts';
  IF v IS NULL THEN
    r.max_attempts := 3;
  ELSE
    IF jsonb_typeof(v) = 'number' THEN n := v::numeric; END IF;
    IF jsonb_typeof(v) <> 'number' OR n <> trunc(n) OR n NOT BETWEEN 1 AND 2147483647 THEN
      RAISE EXCEPTION '%: %maxAttempts must be a whole number from 1 to 2147483647, got %', fn, at, v
        USING ERRCODE = 'invalid_parameter_value', COLUMN = 'maxAttempts';
    END IF;
    r.max_attempts := n::integer;
  END IF;

  v := j -> 'uniqueKey';
  IF v IS NOT NULL AND jsonb_typeof(v) <> 'null' THEN
    IF jsonb_typeof(v) <> 'string' OR length(v #>> '{}') NOT BETWEEN 1 AND 200 THEN
      RAISE EXCEPTION '%: %uniqueKey must be a string of 1 to 200 characters or null, got %', fn, at, v
        USING ERRCODE = 'invalid_parameter_value', COLUMN = 'uniqueKey';
    END IF;
    r.unique_key := v #>> '{}';
  END IF;

  r.timebox := @s@.jobclock_duration_ms(j -> 'timebox', fn || ': ' || at || 'timebox');

  v := j -> 'subject';
  IF v IS NOT NULL AND jsonb_typeof(v) <> 'null' THEN
    IF jsonb_typeof(v) <> 'string' THEN
      RAISE EXCEPTION '%: %subject must be a string or null, got %', fn, at, v USING ERRCODE = 'invalid_parameter_value', COLUMN = 'subject';
    END IF;
    r.subject := v #>> '{}';
  END IF;
  v := j -> 'submitter';
  IF v IS NOT NULL AND jsonb_typeof(v) <> 'null' THEN
    IF jsonb_typeof(v) <> 'string' THEN
      RAISE EXCEPTION '%: %submitter must be a string or null, got %', fn, at, v USING ERRCODE = 'invalid_parameter_value', COLUMN = 'submitter';
    END IF;
    r.submitter := v #>> '{}';
  END IF;
  RETURN r;
END;
$$;
$fn$;
  EXECUTE replace(body, '@s@', s);

  -- Inserts one validated row, honouring its uniqueKey as POST /jobs does: while an open (queued or
  -- running) job holds the key, that job's id is returned and nothing is inserted.
  body := $fn$
CREATE FUNCTION @s@.jobclock_insert_job_row(r @s@.job) RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, @s@, pg_temp
AS $$
DECLARE
  new_id bigint;
BEGIN
  IF r.unique_key IS NULL THEN
    INSERT INTO @s@.job (type, group_, args, subject, submitter, priority, run_at, max_attempts, timebox, created_at, updated_at)
    VALUES (r.type, r.group_, r.args, r.subject, r.submitter, r.priority, r.run_at, r.max_attempts, r.timebox, now(), now())
    RETURNING id INTO new_id;
    RETURN new_id;
  END IF;
  FOR attempt IN 1..5 LOOP
    INSERT INTO @s@.job (type, group_, args, subject, submitter, priority, run_at, max_attempts, unique_key, timebox, created_at, updated_at)
    VALUES (r.type, r.group_, r.args, r.subject, r.submitter, r.priority, r.run_at, r.max_attempts, r.unique_key, r.timebox, now(), now())
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
CREATE FUNCTION @s@.jobclock_add_job(type text, args jsonb DEFAULT NULL, options jsonb DEFAULT '{}')
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, @s@, pg_temp
AS $$
DECLARE
  o jsonb := coalesce(options, '{}'::jsonb);
BEGIN
  IF jsonb_typeof(o) <> 'object' THEN
    RAISE EXCEPTION 'jobclock_add_job: options must be a JSON object like {"priority": 5}, got %', o
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF o ? 'type' OR o ? 'args' THEN
    RAISE EXCEPTION 'jobclock_add_job: pass type and args as the first two arguments, not in options'
      USING ERRCODE = 'invalid_parameter_value', COLUMN = CASE WHEN o ? 'type' THEN 'type' ELSE 'args' END;
  END IF;
  IF type IS NULL OR length(type) NOT BETWEEN 1 AND 200 THEN
    RAISE EXCEPTION 'jobclock_add_job: type must be a string of 1 to 200 characters, got %', coalesce(quote_literal(type), 'NULL')
      USING ERRCODE = 'invalid_parameter_value', COLUMN = 'type';
  END IF;
  RETURN @s@.jobclock_insert_job_row(
    @s@.jobclock_job_row(o || jsonb_build_object('type', type, 'args', args), 'jobclock_add_job', 'options.'));
END;
$$;
$fn$;
  EXECUTE replace(body, '@s@', s);

  -- Many jobs, ids in input order. Without unique keys: one multi-row INSERT. With them: one row at
  -- a time in input order, so a key taken by an earlier entry returns that entry's id, as
  -- POST /jobs/batch does.
  body := $fn$
CREATE FUNCTION @s@.jobclock_add_jobs(jobs jsonb)
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
        INSERT INTO @s@.job (id, type, group_, args, subject, submitter, priority, run_at, max_attempts, timebox, created_at, updated_at)
        OVERRIDING SYSTEM VALUE
        SELECT n.id, (n.j).type, (n.j).group_, (n.j).args, (n.j).subject, (n.j).submitter, (n.j).priority, (n.j).run_at,
               (n.j).max_attempts, (n.j).timebox, now(), now()
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

  EXECUTE replace($g$
REVOKE ALL ON FUNCTION @s@.jobclock_duration_ms(jsonb, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @s@.jobclock_job_row(jsonb, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @s@.jobclock_insert_job_row(@s@.job) FROM PUBLIC;
REVOKE ALL ON FUNCTION @s@.jobclock_add_job(text, jsonb, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION @s@.jobclock_add_jobs(jsonb) FROM PUBLIC;
$g$, '@s@', s);
END;
$migration$;
