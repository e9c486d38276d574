-- The schema of a freshly migrated jobclock database, generated from its catalogue by
-- `npm run schema` (src/cli/schema.ts). Do not edit: change a migration and regenerate.
-- CI fails when this file differs from what the migrations make.

-- Extensions

CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- Functions

CREATE OR REPLACE FUNCTION public.jobclock_add_job(type text, args jsonb DEFAULT NULL::jsonb, options jsonb DEFAULT '{}'::jsonb)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
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
  RETURN public.jobclock_insert_job_row(
    public.jobclock_job_row(o || jsonb_build_object('type', type, 'args', args), 'jobclock_add_job', 'options.'));
END;
$function$;
REVOKE ALL ON FUNCTION public.jobclock_add_job(type text, args jsonb, options jsonb) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.jobclock_add_jobs(jobs jsonb)
 RETURNS SETOF bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
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
        SELECT t.ord, public.jobclock_job_row(t.e, 'jobclock_add_jobs', 'jobs[' || (t.ord - 1) || '].') AS j
        FROM jsonb_array_elements(jobs) WITH ORDINALITY AS t(e, ord)
      ),
      numbered AS MATERIALIZED (
        SELECT nextval(pg_get_serial_sequence('public.job', 'id')::regclass) AS id, i.ord, i.j
        FROM (SELECT * FROM input ORDER BY ord) AS i
      ),
      ins AS (
        INSERT INTO public.job (id, type, group_, args, subject, submitter, priority, run_at, max_attempts, timebox, traceparent, start_by,
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
  PERFORM public.jobclock_job_row(t.e, 'jobclock_add_jobs', 'jobs[' || (t.ord - 1) || '].')
    FROM jsonb_array_elements(jobs) WITH ORDINALITY AS t(e, ord);
  FOR elem, pos IN SELECT t.e, t.ord FROM jsonb_array_elements(jobs) WITH ORDINALITY AS t(e, ord) ORDER BY t.ord LOOP
    RETURN NEXT public.jobclock_insert_job_row(public.jobclock_job_row(elem, 'jobclock_add_jobs', 'jobs[' || (pos - 1) || '].'));
  END LOOP;
END;
$function$;
REVOKE ALL ON FUNCTION public.jobclock_add_jobs(jobs jsonb) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.jobclock_default_admit(names text[], max_n integer)
 RETURNS TABLE(name text, free integer, last_end timestamp with time zone)
 LANGUAGE plpgsql
 SET enable_seqscan TO 'off'
AS $function$
DECLARE
  locked text[];
BEGIN
  SELECT coalesce(array_agg(g.name), '{}') INTO locked
  FROM (SELECT d.name FROM (SELECT DISTINCT u.name FROM unnest(names) u(name) WHERE u.name IS NOT NULL) d
        ORDER BY random() LIMIT 500) g
  WHERE pg_try_advisory_xact_lock(1245923140, hashtext(g.name));
  -- a statement of its own: its snapshot is taken now, after the locks, and sees every lease that
  -- held one of them committed
  RETURN QUERY
    SELECT l.name, greatest(max_n - r.n, 0)::int,
           (SELECT j.finished_at FROM job j
             WHERE j.group_default AND j.finished_at IS NOT NULL AND hashtext(j.group_) = hashtext(l.name) AND j.group_ = l.name
             ORDER BY hashtext(j.group_), j.group_, j.finished_at DESC LIMIT 1)
    FROM unnest(locked) l(name)
    CROSS JOIN LATERAL (
      SELECT count(*)::int AS n FROM job j WHERE j.group_default AND coalesce(j.state = 'running', false) AND hashtext(j.group_) = hashtext(l.name) AND j.group_ = l.name
    ) r;
END;
$function$;
REVOKE ALL ON FUNCTION public.jobclock_default_admit(names text[], max_n integer) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.jobclock_default_full(max_n integer)
 RETURNS text[]
 LANGUAGE sql
 STABLE
 SET enable_seqscan TO 'off'
AS $function$
  SELECT coalesce(array_agg(h.name), '{}')
  FROM (
    SELECT s.name FROM flow_slot s
    WHERE s.kind = 'default-group' AND s.job_id IS NOT NULL
    GROUP BY s.name
    HAVING count(*) >= max_n
  ) h
$function$;

CREATE OR REPLACE FUNCTION public.jobclock_default_held()
 RETURNS jsonb
 LANGUAGE sql
 STABLE
 SET enable_seqscan TO 'off'
AS $function$
  SELECT coalesce(jsonb_object_agg(h.name, h.ns), '{}')
  FROM (
    SELECT s.name, array_agg(s.n) AS ns FROM flow_slot s
    WHERE s.kind = 'default-group' AND s.job_id IS NOT NULL
    GROUP BY s.name
  ) h
$function$;

CREATE OR REPLACE FUNCTION public.jobclock_default_held_of(names text[])
 RETURNS jsonb
 LANGUAGE sql
 STABLE
 SET enable_seqscan TO 'off'
AS $function$
  SELECT coalesce(jsonb_object_agg(h.name, h.ns), '{}')
  FROM (
    SELECT s.name, array_agg(s.n) AS ns FROM flow_slot s
    WHERE s.kind = 'default-group' AND s.job_id IS NOT NULL AND s.name = ANY (names)
    GROUP BY s.name
  ) h
$function$;

CREATE OR REPLACE FUNCTION public.jobclock_default_starts(groups text[], ranks integer[], locked boolean[], max_n integer, at timestamp with time zone)
 RETURNS timestamp with time zone[]
 LANGUAGE plpgsql
 SET enable_seqscan TO 'off'
AS $function$
BEGIN
  -- the statement's snapshot is taken now, after the caller took the locks
  RETURN ARRAY(
    SELECT CASE WHEN x.locked
                 AND x.rank <= max_n - (SELECT count(*) FROM (
                       SELECT 1 FROM job j
                       WHERE j.group_default AND coalesce(j.state = 'running', false) AND hashtext(j.group_) = hashtext(x.g) AND j.group_ = x.g
                       LIMIT max_n) r)
                THEN greatest(at, (SELECT j.finished_at FROM job j
                                    WHERE j.group_default AND j.finished_at IS NOT NULL
                                      AND hashtext(j.group_) = hashtext(x.g) AND j.group_ = x.g
                                    ORDER BY hashtext(j.group_), j.group_, j.finished_at DESC LIMIT 1)) END
    FROM unnest(groups, ranks, locked) WITH ORDINALITY x(g, rank, locked, k)
    ORDER BY x.k);
END;
$function$;
REVOKE ALL ON FUNCTION public.jobclock_default_starts(groups text[], ranks integer[], locked boolean[], max_n integer, at timestamp with time zone) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.jobclock_default_used(window_start timestamp with time zone, max_n integer)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
 SET enable_seqscan TO 'off'
AS $function$
  SELECT coalesce(jsonb_object_agg(u.name, u.ns), '{}')
  FROM (
    SELECT t.name, array_agg(t.n) AS ns FROM flow_token t
    WHERE t.kind = 'default-group' AND t.used_at > window_start AND t.n <= max_n
    GROUP BY t.name
  ) u
$function$;

CREATE OR REPLACE FUNCTION public.jobclock_duration_ms(value jsonb, field text)
 RETURNS bigint
 LANGUAGE plpgsql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
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
$function$;
REVOKE ALL ON FUNCTION public.jobclock_duration_ms(value jsonb, field text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.jobclock_fair_lanes(p_types text[], p_groups text[], p_now timestamp with time zone, p_want integer, p_start integer, p_blocked_groups text[])
 RETURNS TABLE(type text, priority integer, group_ text, hash integer)
 LANGUAGE plpgsql
 STABLE
AS $function$
DECLARE
  src text;
  lvl integer;
  found_n bigint;
  due timestamptz := p_now + interval '1 millisecond';
BEGIN
  FOREACH src IN ARRAY coalesce(p_types, ARRAY[NULL::text]) LOOP
    IF src IS NULL THEN
      SELECT j.priority INTO lvl FROM job j WHERE j.state = 'queued' ORDER BY j.priority DESC LIMIT 1;
    ELSE
      SELECT j.priority INTO lvl FROM job j WHERE j.state = 'queued' AND j.type = src ORDER BY j.type, j.priority DESC LIMIT 1;
    END IF;
    WHILE lvl IS NOT NULL LOOP
      IF p_groups IS NOT NULL AND src IS NULL THEN
        -- the named groups: one probe each
        RETURN QUERY
          SELECT src, lvl, g.name, hashtext(g.name) FROM unnest(p_groups) AS g(name)
          WHERE NOT (g.name = ANY (p_blocked_groups)) AND EXISTS (
            SELECT 1 FROM job j
            WHERE j.state = 'queued' AND j.priority = lvl
              AND hashtext(j.group_) = hashtext(g.name) AND j.group_ = g.name AND j.run_at < due);
      ELSIF p_groups IS NOT NULL THEN
        RETURN QUERY
          SELECT src, lvl, g.name, hashtext(g.name) FROM unnest(p_groups) AS g(name)
          WHERE NOT (g.name = ANY (p_blocked_groups)) AND EXISTS (
            SELECT 1 FROM job j
            WHERE j.state = 'queued' AND j.type = src AND j.priority = lvl
              AND hashtext(j.group_) = hashtext(g.name) AND j.group_ = g.name AND j.run_at < due);
      ELSIF src IS NULL THEN
        RETURN QUERY
          WITH RECURSIVE walk(h, g, below, run_at, done, steps) AS (
            SELECT p_start, ''::text, 2147483648::bigint, NULL::timestamptz, false, 0
            UNION ALL
            SELECT coalesce(nx.h, -2147483648), coalesce(nx.g, ''), CASE WHEN nx.g IS NULL THEN p_start::bigint ELSE w.below END,
                   nx.run_at, nx.g IS NULL AND w.below <> 2147483648, w.steps + 1
            FROM walk w LEFT JOIN LATERAL (
              SELECT hashtext(j.group_) AS h, j.group_ AS g, j.run_at FROM job j
              WHERE j.state = 'queued' AND j.priority = lvl
                AND (hashtext(j.group_), j.group_) > (w.h, w.g) AND hashtext(j.group_) < w.below
              ORDER BY j.priority DESC, hashtext(j.group_), j.group_, j.run_at, j.id LIMIT 1) nx ON true
            WHERE NOT w.done AND w.steps < 1000 + p_want
          )
          SELECT src, lvl, w.g, w.h FROM walk w
          WHERE w.run_at < due AND NOT (w.g = ANY (p_blocked_groups))
          LIMIT p_want;
      ELSE
        RETURN QUERY
          WITH RECURSIVE walk(h, g, below, run_at, done, steps) AS (
            SELECT p_start, ''::text, 2147483648::bigint, NULL::timestamptz, false, 0
            UNION ALL
            SELECT coalesce(nx.h, -2147483648), coalesce(nx.g, ''), CASE WHEN nx.g IS NULL THEN p_start::bigint ELSE w.below END,
                   nx.run_at, nx.g IS NULL AND w.below <> 2147483648, w.steps + 1
            FROM walk w LEFT JOIN LATERAL (
              SELECT hashtext(j.group_) AS h, j.group_ AS g, j.run_at FROM job j
              WHERE j.state = 'queued' AND j.type = src AND j.priority = lvl
                AND (hashtext(j.group_), j.group_) > (w.h, w.g) AND hashtext(j.group_) < w.below
              ORDER BY j.type, j.priority DESC, hashtext(j.group_), j.group_, j.run_at, j.id LIMIT 1) nx ON true
            WHERE NOT w.done AND w.steps < 1000 + p_want
          )
          SELECT src, lvl, w.g, w.h FROM walk w
          WHERE w.run_at < due AND NOT (w.g = ANY (p_blocked_groups))
          LIMIT p_want;
      END IF;
      GET DIAGNOSTICS found_n = ROW_COUNT;
      EXIT WHEN found_n > 0;
      IF src IS NULL THEN
        SELECT j.priority INTO lvl FROM job j WHERE j.state = 'queued' AND j.priority < lvl ORDER BY j.priority DESC LIMIT 1;
      ELSE
        SELECT j.priority INTO lvl FROM job j WHERE j.state = 'queued' AND j.type = src AND j.priority < lvl
         ORDER BY j.type, j.priority DESC LIMIT 1;
      END IF;
      IF NOT FOUND THEN
        lvl := NULL;
      END IF;
    END LOOP;
  END LOOP;
END;
$function$;

CREATE OR REPLACE FUNCTION public.jobclock_insert_job_row(r job)
 RETURNS bigint
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
DECLARE
  new_id bigint;
  debounce interval;
BEGIN
  IF r.debounce_key IS NULL THEN
    RETURN public.jobclock_insert_undebounced_job_row(r);
  END IF;
  debounce := r.run_at - now();
  -- one statement: a new job, or the queued holder of the key takes the args and the later runAt
  INSERT INTO public.job AS x (type, group_, args, subject, submitter, priority, run_at, max_attempts, debounce_key, debounce_until, timebox,
                            traceparent, start_by, created_at, updated_at)
  VALUES (r.type, r.group_, r.args, r.subject, r.submitter, r.priority, least(r.run_at, r.start_by - debounce), r.max_attempts,
          r.debounce_key, r.debounce_until, r.timebox, r.traceparent, r.start_by, now(), now())
  ON CONFLICT (debounce_key) WHERE state = 'queued' AND debounce_until IS NOT NULL
  DO UPDATE SET args = EXCLUDED.args, run_at = least(r.run_at, x.debounce_until, x.start_by - debounce), updated_at = EXCLUDED.updated_at
  RETURNING id INTO new_id;
  RETURN new_id;
END;
$function$;
REVOKE ALL ON FUNCTION public.jobclock_insert_job_row(r job) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.jobclock_insert_undebounced_job_row(r job)
 RETURNS bigint
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
DECLARE
  new_id bigint;
BEGIN
  IF r.unique_key IS NULL THEN
    INSERT INTO public.job (type, group_, args, subject, submitter, priority, run_at, max_attempts, timebox, traceparent, start_by, created_at, updated_at)
    VALUES (r.type, r.group_, r.args, r.subject, r.submitter, r.priority, r.run_at, r.max_attempts, r.timebox, r.traceparent, r.start_by, now(), now())
    RETURNING id INTO new_id;
    RETURN new_id;
  END IF;
  FOR attempt IN 1..5 LOOP
    INSERT INTO public.job (type, group_, args, subject, submitter, priority, run_at, max_attempts, unique_key, timebox, traceparent, start_by,
                         created_at, updated_at)
    VALUES (r.type, r.group_, r.args, r.subject, r.submitter, r.priority, r.run_at, r.max_attempts, r.unique_key, r.timebox, r.traceparent,
            r.start_by, now(), now())
    ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND state IN ('queued', 'running') DO NOTHING
    RETURNING id INTO new_id;
    IF new_id IS NOT NULL THEN
      RETURN new_id;
    END IF;
    SELECT id INTO new_id FROM public.job WHERE unique_key = r.unique_key AND state IN ('queued', 'running');
    IF new_id IS NOT NULL THEN
      RETURN new_id;
    END IF;
    -- the holder finished between the two statements: insert again
  END LOOP;
  RAISE EXCEPTION 'uniqueKey "%" changed hands too often to settle; retry the transaction', r.unique_key
    USING ERRCODE = 'serialization_failure';
END;
$function$;
REVOKE ALL ON FUNCTION public.jobclock_insert_undebounced_job_row(r job) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.jobclock_job_refused()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
  c text := CASE
    WHEN length(NEW.type) NOT BETWEEN 1 AND 200 THEN 'job_type_check'
    WHEN length(NEW.group_) NOT BETWEEN 1 AND 200 THEN 'job_group__check'
    WHEN length(NEW.unique_key) NOT BETWEEN 1 AND 200 THEN 'job_unique_key_check'
    WHEN length(NEW.debounce_key) NOT BETWEEN 1 AND 200 THEN 'job_debounce_key_check'
    WHEN length(NEW.traceparent) > 55 THEN 'job_traceparent_check'
    WHEN NEW.max_attempts < 1 THEN 'job_max_attempts_check'
    WHEN NEW.timebox <= 0 THEN 'job_timebox_check'
    WHEN NEW.run_interval <= 0 THEN 'job_run_interval_check'
    WHEN NEW.run_tolerance < 0 THEN 'job_run_tolerance_check'
  END;
BEGIN
  RAISE EXCEPTION 'new row for relation "job" violates check constraint "%"', c
    USING ERRCODE = 'check_violation', CONSTRAINT = c, TABLE = TG_TABLE_NAME, SCHEMA = TG_TABLE_SCHEMA;
END;
$function$;
REVOKE ALL ON FUNCTION public.jobclock_job_refused() FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.jobclock_job_row(j jsonb, fn text, at text)
 RETURNS job
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
DECLARE
  r public.job;
  k text;
  v jsonb;
  debounce_ms bigint;
  max_ms bigint;
BEGIN
  IF j IS NULL OR jsonb_typeof(j) <> 'object' THEN
    RETURN public.jobclock_job_row_deadlined(j, fn, at); -- raises, saying what a job looks like
  END IF;
  v := j - ARRAY['type', 'args', 'group', 'priority', 'runAt', 'maxAttempts', 'uniqueKey', 'timebox', 'subject', 'submitter', 'traceparent',
                 'startBy', 'debounce', 'debounceMax'];
  IF v <> '{}'::jsonb THEN
    SELECT min(key) INTO k FROM jsonb_object_keys(v) AS key;
    RAISE EXCEPTION '%: % is not a field of a job; the fields are type, args, group, priority, runAt, maxAttempts, uniqueKey, timebox, subject, submitter, traceparent, startBy, debounce, debounceMax', fn, at || k
      USING ERRCODE = 'invalid_parameter_value', COLUMN = k;
  END IF;
  r := public.jobclock_job_row_deadlined(j - ARRAY['debounce', 'debounceMax'], fn, at);
  IF coalesce(jsonb_typeof(j -> 'debounceMax'), 'null') <> 'null' AND coalesce(jsonb_typeof(j -> 'debounce'), 'null') = 'null' THEN
    RAISE EXCEPTION '%: %debounceMax needs a debounce', fn, at USING ERRCODE = 'invalid_parameter_value', COLUMN = 'debounceMax';
  END IF;
  IF coalesce(jsonb_typeof(j -> 'debounce'), 'null') = 'null' THEN
    RETURN r;
  END IF;
  BEGIN
    debounce_ms := public.jobclock_duration_ms(j -> 'debounce', at || 'debounce');
    max_ms := coalesce(public.jobclock_duration_ms(j -> 'debounceMax', at || 'debounceMax'), 10 * debounce_ms);
  EXCEPTION WHEN invalid_parameter_value THEN
    GET STACKED DIAGNOSTICS k = MESSAGE_TEXT;
    RAISE EXCEPTION '%: %', fn, k
      USING ERRCODE = 'invalid_parameter_value', COLUMN = CASE WHEN k LIKE at || 'debounceMax%' THEN 'debounceMax' ELSE 'debounce' END;
  END;
  IF r.unique_key IS NULL THEN
    RAISE EXCEPTION '%: %debounce needs a uniqueKey: the submissions that share it make one job', fn, at
      USING ERRCODE = 'invalid_parameter_value', COLUMN = 'debounce';
  END IF;
  IF j ? 'runAt' THEN
    RAISE EXCEPTION '%: %runAt cannot be given with debounce, which sets it (now + debounce)', fn, at
      USING ERRCODE = 'invalid_parameter_value', COLUMN = 'runAt';
  END IF;
  IF max_ms < debounce_ms THEN
    RAISE EXCEPTION '%: %debounceMax must be at least debounce', fn, at USING ERRCODE = 'invalid_parameter_value', COLUMN = 'debounceMax';
  END IF;
  r.debounce_key := r.unique_key;
  r.unique_key := NULL;
  r.run_at := now() + debounce_ms * interval '1 millisecond';
  r.debounce_until := now() + max_ms * interval '1 millisecond';
  RETURN r;
END;
$function$;
REVOKE ALL ON FUNCTION public.jobclock_job_row(j jsonb, fn text, at text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.jobclock_job_row_deadlined(j jsonb, fn text, at text)
 RETURNS job
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
DECLARE
  r public.job;
  k text;
  v jsonb;
  ts text;
  dflt public.job_type_defaults;
BEGIN
  IF j IS NULL OR jsonb_typeof(j) <> 'object' THEN
    RETURN public.jobclock_job_row_traced(j, fn, at); -- raises, saying what a job looks like
  END IF;
  v := j - ARRAY['type', 'args', 'group', 'priority', 'runAt', 'maxAttempts', 'uniqueKey', 'timebox', 'subject', 'submitter', 'traceparent',
                 'startBy'];
  IF v <> '{}'::jsonb THEN
    SELECT min(key) INTO k FROM jsonb_object_keys(v) AS key;
    RAISE EXCEPTION '%: % is not a field of a job; the fields are type, args, group, priority, runAt, maxAttempts, uniqueKey, timebox, subject, submitter, traceparent, startBy', fn, at || k
      USING ERRCODE = 'invalid_parameter_value', COLUMN = k;
  END IF;
  r := public.jobclock_job_row_traced(j - 'startBy', fn, at);
  -- the type's defaults, for the fields the job does not give
  SELECT d.* INTO dflt FROM public.job_type_defaults d WHERE d.type = r.type;
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
$function$;
REVOKE ALL ON FUNCTION public.jobclock_job_row_deadlined(j jsonb, fn text, at text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.jobclock_job_row_fields(j jsonb, fn text, at text)
 RETURNS job
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
DECLARE
  r public.job;
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

  r.timebox := public.jobclock_duration_ms(j -> 'timebox', fn || ': ' || at || 'timebox');

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
$function$;
REVOKE ALL ON FUNCTION public.jobclock_job_row_fields(j jsonb, fn text, at text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.jobclock_job_row_traced(j jsonb, fn text, at text)
 RETURNS job
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
DECLARE
  r public.job;
  k text;
  v jsonb;
BEGIN
  IF j IS NULL OR jsonb_typeof(j) <> 'object' THEN
    RETURN public.jobclock_job_row_fields(j, fn, at); -- raises, saying what a job looks like
  END IF;
  v := j - ARRAY['type', 'args', 'group', 'priority', 'runAt', 'maxAttempts', 'uniqueKey', 'timebox', 'subject', 'submitter', 'traceparent'];
  IF v <> '{}'::jsonb THEN
    SELECT min(key) INTO k FROM jsonb_object_keys(v) AS key;
    RAISE EXCEPTION '%: % is not a field of a job; the fields are type, args, group, priority, runAt, maxAttempts, uniqueKey, timebox, subject, submitter, traceparent', fn, at || k
      USING ERRCODE = 'invalid_parameter_value', COLUMN = k;
  END IF;
  r := public.jobclock_job_row_fields(j - 'traceparent', fn, at);
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
$function$;
REVOKE ALL ON FUNCTION public.jobclock_job_row_traced(j jsonb, fn text, at text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.jobclock_job_state_changed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
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
$function$;
REVOKE ALL ON FUNCTION public.jobclock_job_state_changed() FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.jobclock_job_updated()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
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
$function$;
REVOKE ALL ON FUNCTION public.jobclock_job_updated() FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.jobclock_lanes(p_types text[], p_groups text[], p_now timestamp with time zone, p_want integer, p_start integer, p_blocked_groups text[])
 RETURNS TABLE(type text, priority integer, group_ text, hash integer, first_run_at timestamp with time zone, first_id bigint)
 LANGUAGE sql
 STABLE
AS $function$
  SELECT * FROM jobclock_lanes(p_types, p_groups, p_now, p_want, p_start, p_blocked_groups, NULL::integer)
$function$;

CREATE OR REPLACE FUNCTION public.jobclock_lanes(p_types text[], p_groups text[], p_now timestamp with time zone, p_want integer, p_start integer, p_blocked_groups text[], p_default_n integer)
 RETURNS TABLE(type text, priority integer, group_ text, hash integer, first_run_at timestamp with time zone, first_id bigint)
 LANGUAGE plpgsql
 STABLE
AS $function$
DECLARE
  src text;
  lvl integer;
  -- the first entry (in index order) of level lvl: its lane is the lowest on the ring
  h0 integer;
  g0 text;
  r0 timestamptz;
  i0 bigint;
  found_n bigint;
  due timestamptz := p_now + interval '1 millisecond';
  -- the group of the level's second entry, and whether it is another than the first's
  h1 integer;
  g1 text;
  small boolean;
BEGIN
  FOREACH src IN ARRAY coalesce(p_types, ARRAY[NULL::text]) LOOP
    IF src IS NULL THEN
      SELECT j.priority, hashtext(j.group_), j.group_, j.run_at, j.id INTO lvl, h0, g0, r0, i0 FROM job j
       WHERE j.state = 'queued' ORDER BY j.priority DESC, hashtext(j.group_), j.group_, j.run_at, j.id LIMIT 1;
    ELSE
      SELECT j.priority, hashtext(j.group_), j.group_, j.run_at, j.id INTO lvl, h0, g0, r0, i0 FROM job j
       WHERE j.state = 'queued' AND j.type = src
       ORDER BY j.type, j.priority DESC, hashtext(j.group_), j.group_, j.run_at, j.id LIMIT 1;
    END IF;
    WHILE lvl IS NOT NULL LOOP
      -- typed and untyped lanes are separate statements, each planned on its own index (one with
      -- "src IS NULL OR j.type = src" would be planned once for both and fit neither)
      IF p_groups IS NOT NULL AND src IS NULL THEN
        -- the named groups: one probe each, for the first job
        RETURN QUERY
          SELECT src, lvl, g.name, hashtext(g.name), f.run_at, f.id FROM unnest(p_groups) AS g(name)
          CROSS JOIN LATERAL (
            SELECT j.run_at, j.id FROM job j
            WHERE j.state = 'queued' AND j.priority = lvl
              AND hashtext(j.group_) = hashtext(g.name) AND j.group_ = g.name
            ORDER BY j.priority DESC, hashtext(j.group_), j.group_, j.run_at, j.id LIMIT 1) f
          WHERE NOT (g.name = ANY (p_blocked_groups)) AND f.run_at < due AND (p_default_n IS NULL OR g.name IS NULL OR NOT (
              (SELECT count(*) FROM (SELECT 1 FROM job r WHERE r.group_default AND coalesce(r.state = 'running', false) AND hashtext(r.group_) = hashtext(g.name) AND r.group_ = g.name LIMIT p_default_n) x) >= p_default_n
              AND NOT EXISTS (SELECT 1 FROM flow_policy fp WHERE fp.kind = 'group' AND fp.name = g.name)));
      ELSIF p_groups IS NOT NULL THEN
        RETURN QUERY
          SELECT src, lvl, g.name, hashtext(g.name), f.run_at, f.id FROM unnest(p_groups) AS g(name)
          CROSS JOIN LATERAL (
            SELECT j.run_at, j.id FROM job j
            WHERE j.state = 'queued' AND j.type = src AND j.priority = lvl
              AND hashtext(j.group_) = hashtext(g.name) AND j.group_ = g.name
            ORDER BY j.type, j.priority DESC, hashtext(j.group_), j.group_, j.run_at, j.id LIMIT 1) f
          WHERE NOT (g.name = ANY (p_blocked_groups)) AND f.run_at < due AND (p_default_n IS NULL OR g.name IS NULL OR NOT (
              (SELECT count(*) FROM (SELECT 1 FROM job r WHERE r.group_default AND coalesce(r.state = 'running', false) AND hashtext(r.group_) = hashtext(g.name) AND r.group_ = g.name LIMIT p_default_n) x) >= p_default_n
              AND NOT EXISTS (SELECT 1 FROM flow_policy fp WHERE fp.kind = 'group' AND fp.name = g.name)));
      ELSE
        -- the ring from p_start. Where the level's first group has one job queued — a queue of many
        -- small groups, most likely — the walk goes in batches: each step reads the next k entries
        -- of the index after the last group of the step before and takes the first entry of each
        -- group among them as a lane; k doubles while a batch holds distinct groups only (up to 64,
        -- and not beyond the lanes still wanted) and falls back to 1 after one that held two entries
        -- of a group. Else (a few groups with many jobs each) one descent a lane, as before. The
        -- level's first entry (read above) is not read again.
        IF src IS NULL THEN
          SELECT hashtext(j.group_), j.group_ INTO h1, g1 FROM job j
           WHERE j.state = 'queued' AND j.priority = lvl AND (hashtext(j.group_), j.group_, j.run_at, j.id) > (h0, g0, r0, i0)
           ORDER BY j.priority DESC, hashtext(j.group_), j.group_, j.run_at, j.id LIMIT 1;
        ELSE
          SELECT hashtext(j.group_), j.group_ INTO h1, g1 FROM job j
           WHERE j.state = 'queued' AND j.type = src AND j.priority = lvl AND (hashtext(j.group_), j.group_, j.run_at, j.id) > (h0, g0, r0, i0)
           ORDER BY j.type, j.priority DESC, hashtext(j.group_), j.group_, j.run_at, j.id LIMIT 1;
        END IF;
        small := FOUND AND (h1, g1) IS DISTINCT FROM (h0, g0);
        IF small AND src IS NULL THEN
          RETURN QUERY
            WITH RECURSIVE walk(h, g, run_at, id, lane, cur, below, k, done, steps) AS (
              SELECT p_start, ''::text, NULL::timestamptz, NULL::bigint, false, true, 2147483648::bigint, 1, false, 0
              UNION ALL
              SELECT coalesce(x.h, -2147483648), coalesce(x.g, ''), x.run_at, x.id, coalesce(x.lane, false), coalesce(x.last, true),
                     CASE WHEN x.g IS NULL THEN p_start::bigint ELSE w.below END,
                     least(CASE WHEN x.d = w.k THEN 2 * w.k ELSE 1 END, 64, greatest(p_want - w.steps - coalesce(x.d, 0)::int, 1)),
                     x.g IS NULL AND w.below <> 2147483648, w.steps + coalesce(x.d, 0)::int
              FROM walk w LEFT JOIN LATERAL (
                SELECT b.h, b.g, b.run_at, b.id, b.lane, b.last, count(*) FILTER (WHERE b.lane) OVER () AS d
                FROM (
                  SELECT e.h, e.g, e.run_at, e.id,
                         (e.h, e.g) IS DISTINCT FROM (lag(e.h) OVER o, lag(e.g) OVER o) AS lane,
                         row_number() OVER o = count(*) OVER () AS last
                  FROM (
                    SELECT h0 AS h, g0 AS g, r0 AS run_at, i0 AS id WHERE (w.h, w.g) < (h0, g0) AND h0 < w.below
                    UNION ALL
                    (SELECT hashtext(j.group_), j.group_, j.run_at, j.id FROM job j
                      WHERE j.state = 'queued' AND j.priority = lvl
                        AND (hashtext(j.group_), j.group_) > (CASE WHEN (w.h, w.g) < (h0, g0) THEN h0 ELSE w.h END,
                                                              CASE WHEN (w.h, w.g) < (h0, g0) THEN g0 ELSE w.g END)
                        AND hashtext(j.group_) < w.below
                        AND (NOT (w.h, w.g) < (h0, g0) OR h0 < w.below)
                      ORDER BY j.priority DESC, hashtext(j.group_), j.group_, j.run_at, j.id
                      LIMIT w.k - CASE WHEN (w.h, w.g) < (h0, g0) AND h0 < w.below THEN 1 ELSE 0 END)
                  ) e
                  WINDOW o AS (ORDER BY e.h, e.g, e.run_at, e.id)
                ) b
              ) x ON true
              WHERE w.cur AND NOT w.done AND w.steps < 1000 + p_want
            )
            SELECT src, lvl, w.g, w.h, w.run_at, w.id FROM walk w
            WHERE w.lane AND w.run_at < due AND NOT (w.g = ANY (p_blocked_groups)) AND (p_default_n IS NULL OR w.g IS NULL OR NOT (
                (SELECT count(*) FROM (SELECT 1 FROM job r WHERE r.group_default AND coalesce(r.state = 'running', false) AND hashtext(r.group_) = hashtext(w.g) AND r.group_ = w.g LIMIT p_default_n) x) >= p_default_n
                AND NOT EXISTS (SELECT 1 FROM flow_policy fp WHERE fp.kind = 'group' AND fp.name = w.g)))
            LIMIT p_want;
        ELSIF small THEN
          RETURN QUERY
            WITH RECURSIVE walk(h, g, run_at, id, lane, cur, below, k, done, steps) AS (
              SELECT p_start, ''::text, NULL::timestamptz, NULL::bigint, false, true, 2147483648::bigint, 1, false, 0
              UNION ALL
              SELECT coalesce(x.h, -2147483648), coalesce(x.g, ''), x.run_at, x.id, coalesce(x.lane, false), coalesce(x.last, true),
                     CASE WHEN x.g IS NULL THEN p_start::bigint ELSE w.below END,
                     least(CASE WHEN x.d = w.k THEN 2 * w.k ELSE 1 END, 64, greatest(p_want - w.steps - coalesce(x.d, 0)::int, 1)),
                     x.g IS NULL AND w.below <> 2147483648, w.steps + coalesce(x.d, 0)::int
              FROM walk w LEFT JOIN LATERAL (
                SELECT b.h, b.g, b.run_at, b.id, b.lane, b.last, count(*) FILTER (WHERE b.lane) OVER () AS d
                FROM (
                  SELECT e.h, e.g, e.run_at, e.id,
                         (e.h, e.g) IS DISTINCT FROM (lag(e.h) OVER o, lag(e.g) OVER o) AS lane,
                         row_number() OVER o = count(*) OVER () AS last
                  FROM (
                    SELECT h0 AS h, g0 AS g, r0 AS run_at, i0 AS id WHERE (w.h, w.g) < (h0, g0) AND h0 < w.below
                    UNION ALL
                    (SELECT hashtext(j.group_), j.group_, j.run_at, j.id FROM job j
                      WHERE j.state = 'queued' AND j.type = src AND j.priority = lvl
                        AND (hashtext(j.group_), j.group_) > (CASE WHEN (w.h, w.g) < (h0, g0) THEN h0 ELSE w.h END,
                                                              CASE WHEN (w.h, w.g) < (h0, g0) THEN g0 ELSE w.g END)
                        AND hashtext(j.group_) < w.below
                        AND (NOT (w.h, w.g) < (h0, g0) OR h0 < w.below)
                      ORDER BY j.type, j.priority DESC, hashtext(j.group_), j.group_, j.run_at, j.id
                      LIMIT w.k - CASE WHEN (w.h, w.g) < (h0, g0) AND h0 < w.below THEN 1 ELSE 0 END)
                  ) e
                  WINDOW o AS (ORDER BY e.h, e.g, e.run_at, e.id)
                ) b
              ) x ON true
              WHERE w.cur AND NOT w.done AND w.steps < 1000 + p_want
            )
            SELECT src, lvl, w.g, w.h, w.run_at, w.id FROM walk w
            WHERE w.lane AND w.run_at < due AND NOT (w.g = ANY (p_blocked_groups)) AND (p_default_n IS NULL OR w.g IS NULL OR NOT (
                (SELECT count(*) FROM (SELECT 1 FROM job r WHERE r.group_default AND coalesce(r.state = 'running', false) AND hashtext(r.group_) = hashtext(w.g) AND r.group_ = w.g LIMIT p_default_n) x) >= p_default_n
                AND NOT EXISTS (SELECT 1 FROM flow_policy fp WHERE fp.kind = 'group' AND fp.name = w.g)))
            LIMIT p_want;
        ELSIF src IS NULL THEN
          RETURN QUERY
            WITH RECURSIVE walk(h, g, below, run_at, id, done, steps) AS (
              SELECT p_start, ''::text, 2147483648::bigint, NULL::timestamptz, NULL::bigint, false, 0
              UNION ALL
              SELECT coalesce(nx.h, -2147483648), coalesce(nx.g, ''), CASE WHEN nx.g IS NULL THEN p_start::bigint ELSE w.below END,
                     nx.run_at, nx.id, nx.g IS NULL AND w.below <> 2147483648, w.steps + 1
              FROM walk w LEFT JOIN LATERAL (
                SELECT h0 AS h, g0 AS g, r0 AS run_at, i0 AS id WHERE (w.h, w.g) < (h0, g0) AND h0 < w.below
                UNION ALL
                (SELECT hashtext(j.group_), j.group_, j.run_at, j.id FROM job j
                  WHERE j.state = 'queued' AND j.priority = lvl
                    AND (hashtext(j.group_), j.group_) > (w.h, w.g) AND hashtext(j.group_) < w.below
                    AND NOT (w.h, w.g) < (h0, g0)
                  ORDER BY j.priority DESC, hashtext(j.group_), j.group_, j.run_at, j.id LIMIT 1)
              ) nx ON true
              WHERE NOT w.done AND w.steps < 1000 + p_want
            )
            SELECT src, lvl, w.g, w.h, w.run_at, w.id FROM walk w
            WHERE w.run_at < due AND NOT (w.g = ANY (p_blocked_groups)) AND (p_default_n IS NULL OR w.g IS NULL OR NOT (
                (SELECT count(*) FROM (SELECT 1 FROM job r WHERE r.group_default AND coalesce(r.state = 'running', false) AND hashtext(r.group_) = hashtext(w.g) AND r.group_ = w.g LIMIT p_default_n) x) >= p_default_n
                AND NOT EXISTS (SELECT 1 FROM flow_policy fp WHERE fp.kind = 'group' AND fp.name = w.g)))
            LIMIT p_want;
        ELSE
          RETURN QUERY
            WITH RECURSIVE walk(h, g, below, run_at, id, done, steps) AS (
              SELECT p_start, ''::text, 2147483648::bigint, NULL::timestamptz, NULL::bigint, false, 0
              UNION ALL
              SELECT coalesce(nx.h, -2147483648), coalesce(nx.g, ''), CASE WHEN nx.g IS NULL THEN p_start::bigint ELSE w.below END,
                     nx.run_at, nx.id, nx.g IS NULL AND w.below <> 2147483648, w.steps + 1
              FROM walk w LEFT JOIN LATERAL (
                SELECT h0 AS h, g0 AS g, r0 AS run_at, i0 AS id WHERE (w.h, w.g) < (h0, g0) AND h0 < w.below
                UNION ALL
                (SELECT hashtext(j.group_), j.group_, j.run_at, j.id FROM job j
                  WHERE j.state = 'queued' AND j.type = src AND j.priority = lvl
                    AND (hashtext(j.group_), j.group_) > (w.h, w.g) AND hashtext(j.group_) < w.below
                    AND NOT (w.h, w.g) < (h0, g0)
                  ORDER BY j.type, j.priority DESC, hashtext(j.group_), j.group_, j.run_at, j.id LIMIT 1)
              ) nx ON true
              WHERE NOT w.done AND w.steps < 1000 + p_want
            )
            SELECT src, lvl, w.g, w.h, w.run_at, w.id FROM walk w
            WHERE w.run_at < due AND NOT (w.g = ANY (p_blocked_groups)) AND (p_default_n IS NULL OR w.g IS NULL OR NOT (
                (SELECT count(*) FROM (SELECT 1 FROM job r WHERE r.group_default AND coalesce(r.state = 'running', false) AND hashtext(r.group_) = hashtext(w.g) AND r.group_ = w.g LIMIT p_default_n) x) >= p_default_n
                AND NOT EXISTS (SELECT 1 FROM flow_policy fp WHERE fp.kind = 'group' AND fp.name = w.g)))
            LIMIT p_want;
        END IF;
      END IF;
      GET DIAGNOSTICS found_n = ROW_COUNT;
      EXIT WHEN found_n > 0;
      IF src IS NULL THEN
        SELECT j.priority, hashtext(j.group_), j.group_, j.run_at, j.id INTO lvl, h0, g0, r0, i0 FROM job j
         WHERE j.state = 'queued' AND j.priority < lvl ORDER BY j.priority DESC, hashtext(j.group_), j.group_, j.run_at, j.id LIMIT 1;
      ELSE
        SELECT j.priority, hashtext(j.group_), j.group_, j.run_at, j.id INTO lvl, h0, g0, r0, i0 FROM job j
         WHERE j.state = 'queued' AND j.type = src AND j.priority < lvl
         ORDER BY j.type, j.priority DESC, hashtext(j.group_), j.group_, j.run_at, j.id LIMIT 1;
      END IF;
      IF NOT FOUND THEN
        lvl := NULL;
      END IF;
    END LOOP;
  END LOOP;
END;
$function$;

CREATE OR REPLACE FUNCTION public.jobclock_notify_job_inserted()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  PERFORM pg_notify('jobclock_jobs', '');
  RETURN NULL;
END;
$function$;

CREATE OR REPLACE FUNCTION public.jobclock_release_deleted_slots()
 RETURNS trigger
 LANGUAGE plpgsql
 SET enable_seqscan TO 'off'
AS $function$
BEGIN
  -- released_at stays empty: a deleted job has no end for the next holder to start after
  UPDATE flow_slot SET job_id = NULL, released_at = NULL WHERE job_id = OLD.id;
  PERFORM pg_notify('jobclock_jobs', '');
  RETURN OLD;
END;
$function$;

CREATE OR REPLACE FUNCTION public.jobclock_release_job_slots(p_job_id bigint, p_at timestamp with time zone)
 RETURNS void
 LANGUAGE plpgsql
 SET enable_seqscan TO 'off'
AS $function$
BEGIN
  UPDATE flow_slot SET job_id = NULL, released_at = p_at WHERE job_id = p_job_id;
  PERFORM pg_notify('jobclock_jobs', '');
END;
$function$;
REVOKE ALL ON FUNCTION public.jobclock_release_job_slots(p_job_id bigint, p_at timestamp with time zone) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.jobclock_release_permits(ids bigint[], at timestamp with time zone)
 RETURNS bigint
 LANGUAGE plpgsql
 SET enable_seqscan TO 'off'
AS $function$
DECLARE
  k bigint;
BEGIN
  UPDATE flow_slot s SET job_id = NULL, released_at = at WHERE s.job_id = ANY (ids);
  GET DIAGNOSTICS k = ROW_COUNT;
  RETURN k;
END;
$function$;

CREATE OR REPLACE FUNCTION public.jobclock_search_flush()
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public'
AS $function$
DECLARE
  pages integer := 0;
  idx regclass;
BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtext('jobclock_search_flush')) THEN
    RETURN 0;
  END IF;
  FOR idx IN
    SELECT i.indexrelid::regclass
      FROM pg_inherits h
      JOIN pg_index i ON i.indrelid = h.inhrelid
      JOIN pg_class ic ON ic.oid = i.indexrelid
      JOIN pg_am a ON a.oid = ic.relam AND a.amname = 'gin'
     WHERE h.inhparent = 'public.job_search'::regclass
     ORDER BY 1
  LOOP
    pages := pages + gin_clean_pending_list(idx);
  END LOOP;
  RETURN pages;
END;
$function$;

CREATE OR REPLACE FUNCTION public.jobclock_search_on_delete()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  DELETE FROM job_search
   WHERE id = ANY (ARRAY(SELECT id FROM jobclock_gone))
     AND id BETWEEN (SELECT min(id) FROM jobclock_gone) AND (SELECT max(id) FROM jobclock_gone);
  RETURN NULL;
END;
$function$;

CREATE OR REPLACE FUNCTION public.jobclock_search_on_insert()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF NEW.id < (SELECT s.hi FROM job_search_sealed s WHERE s.lo <= NEW.id ORDER BY s.lo DESC LIMIT 1) THEN
    INSERT INTO job_search (id, type, group_, worker, args, text)
      VALUES (NEW.id, NEW.type, NEW.group_, NEW.worker, NEW.args, jobclock_search_text(NEW.args, NEW.subject, NEW.error))
    ON CONFLICT (id) DO UPDATE
      SET type = EXCLUDED.type, group_ = EXCLUDED.group_, worker = EXCLUDED.worker, args = EXCLUDED.args, text = EXCLUDED.text;
  END IF;
  RETURN NULL;
END;
$function$;

CREATE OR REPLACE FUNCTION public.jobclock_search_ranges()
 RETURNS TABLE(name text, lo bigint, hi bigint)
 LANGUAGE sql
 STABLE
AS $function$
  SELECT c.relname::text, b[1]::bigint, b[2]::bigint
    FROM pg_inherits i
    JOIN pg_class c ON c.oid = i.inhrelid,
         regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \(''?(-?[0-9]+)''?\) TO \(''?(-?[0-9]+)''?\)') b
   WHERE i.inhparent = 'job_search'::regclass AND b IS NOT NULL
   ORDER BY 2
$function$;

CREATE OR REPLACE FUNCTION public.jobclock_search_slices_due(width bigint DEFAULT 10000)
 RETURNS TABLE(lo bigint, hi bigint)
 LANGUAGE sql
 STABLE
AS $function$
  WITH last AS (SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence('job', 'id')), 0) + 1 AS id),
  s AS (SELECT s.lo, s.hi, lead(s.lo) OVER (ORDER BY s.lo) AS next_lo FROM job_search_sealed s),
  gaps AS (
    SELECT s.hi AS a, coalesce(s.next_lo, (SELECT id FROM last)) AS b, s.next_lo IS NULL AS tail FROM s
    UNION ALL
    SELECT coalesce((SELECT min(j.id) FROM job j), 0),
           coalesce((SELECT min(x.lo) FROM job_search_sealed x), (SELECT id FROM last)),
           NOT EXISTS (SELECT 1 FROM job_search_sealed)
  ),
  pieces AS (
    SELECT p.lo, least(p.lo + width, g.b) AS hi, g.tail
      FROM gaps g, generate_series(g.a, g.b - 1, width) AS p(lo)
     WHERE g.b > g.a
  )
  SELECT p.lo, p.hi FROM pieces p
   WHERE (NOT p.tail OR p.hi = p.lo + width)
     AND (SELECT count(*) FROM (
            SELECT 1 FROM job j WHERE j.id >= p.lo AND j.id < p.hi AND j.state = 'queued'
            UNION ALL
            SELECT 1 FROM job j WHERE j.id >= p.lo AND j.id < p.hi AND j.state = 'waiting'
            LIMIT greatest(1, (p.hi - p.lo) / 100)) o) < greatest(1, (p.hi - p.lo) / 100)
   ORDER BY p.lo
$function$;

CREATE OR REPLACE FUNCTION public.jobclock_search_text(args jsonb, subject text, error jsonb)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ SELECT coalesce(args::text, '') || E'\n' || coalesce(subject, '') || E'\n' || coalesce(error::text, '') $function$;

CREATE OR REPLACE FUNCTION public.jobclock_search_upkeep(min_width bigint DEFAULT 1000000, OUT created integer, OUT dropped integer)
 RETURNS record
 LANGUAGE plpgsql
AS $function$
DECLARE
  last_id bigint := coalesce(pg_sequence_last_value(pg_get_serial_sequence('job', 'id')), 0);
  first_id bigint;
  history_lo bigint;
  lo bigint;
  hi bigint;
  w bigint;
  part text;
  r record;
  -- the caller's lock_timeout, given back at the end (the 100 ms below are for this function only)
  caller_lock_timeout text := current_setting('lock_timeout');
BEGIN
  created := 0;
  dropped := 0;
  IF min_width < 1 THEN
    RAISE EXCEPTION 'min_width must be at least 1, not %', min_width;
  END IF;
  -- one instance at a time; the others wait, then find the work done
  PERFORM pg_advisory_xact_lock(hashtext('jobclock_search_upkeep'));
  first_id := coalesce((SELECT min(id) FROM job), last_id + 1);
  history_lo := coalesce((SELECT min(id) FROM job_search), first_id);

  SELECT max(s.hi) INTO hi FROM jobclock_search_ranges() s;
  IF hi IS NULL THEN
    hi := first_id / min_width * min_width;
  END IF;
  WHILE hi <= last_id + 2 * min_width LOOP
    w := greatest(min_width, ((hi - history_lo) / 32 + min_width - 1) / min_width * min_width);
    lo := hi;
    part := 'job_search_p' || lo;
    -- Creating a partition holds job_search whole (ACCESS EXCLUSIVE) for the time it takes (about
    -- 20 ms with its six indexes), so that a statement writing job_search meanwhile cannot send a
    -- row to the default partition by the old partition bounds (with a lighter lock, ATTACH lets it
    -- through and its row then fails the default partition's new constraint). It waits 100 ms at most for the lock
    -- (the workers' reports would queue behind it); if busy, the next sweep makes the partition,
    -- created two ahead of the ids given out, so there is time.
    BEGIN
      SET LOCAL lock_timeout = '100ms';
      LOCK TABLE job_search IN ACCESS EXCLUSIVE MODE;
      EXECUTE format('CREATE TABLE %I (LIKE job_search) WITH (autovacuum_vacuum_insert_threshold = -1)', part);
      -- rows that went to the default partition while this one was missing move into it
      EXECUTE format('WITH m AS (DELETE FROM job_search_default WHERE id >= $1 AND id < $2 RETURNING *) INSERT INTO %I SELECT * FROM m', part)
        USING lo, lo + w;
      -- the partition's indexes are made here, on a table of no or few rows
      EXECUTE format('ALTER TABLE job_search ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)', part, lo, lo + w);
    EXCEPTION WHEN lock_not_available THEN
      RAISE NOTICE 'job_search is busy: partition % is made at a later sweep', part;
      EXIT;
    END;
    hi := lo + w;
    created := created + 1;
  END LOOP;

  FOR r IN SELECT * FROM jobclock_search_ranges() s WHERE s.hi <= last_id LOOP
    CONTINUE WHEN EXISTS (SELECT 1 FROM job WHERE id >= r.lo AND id < r.hi);
    -- Dropping a partition holds job_search whole for a moment: waiting long behind a statement
    -- would stop the workers' reports queued behind it, so it gives up after 100 ms and tries
    -- again at the next sweep. A job of the range not yet committed (its id given out before the check)
    -- finds no partition when it ends, and its row goes to the default partition.
    BEGIN
      SET LOCAL lock_timeout = '100ms';
      EXECUTE format('DROP TABLE %I', r.name);
      dropped := dropped + 1;
    EXCEPTION WHEN lock_not_available THEN
      RAISE NOTICE 'job_search partition % is busy: dropped at a later sweep', r.name;
    END;
  END LOOP;
  PERFORM set_config('lock_timeout', caller_lock_timeout, true);
END;
$function$;

CREATE OR REPLACE FUNCTION public.jobclock_settle_dependencies()
 RETURNS void
 LANGUAGE plpgsql
AS $function$
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
$function$;
REVOKE ALL ON FUNCTION public.jobclock_settle_dependencies() FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.jobclock_webhook_task(t periodic_task, status text)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$
  SELECT jsonb_build_object(
    'id', t.id, 'type', t.task, 'group', t.group_, 'enabled', t.enabled,
    'health', jsonb_build_object(
      'status', status,
      'consecutiveFailures', t.consecutive_failures,
      'lastSuccessAt', to_char(t.last_success_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
      'lastFailureAt', to_char(t.last_failure_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
    'overdueAt', to_char(t.overdue_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
$function$;

CREATE OR REPLACE FUNCTION public.jobclock_webhook_task_event(t periodic_task, ev text, ev_status text, ev_at timestamp with time zone)
 RETURNS bigint
 LANGUAGE plpgsql
AS $function$
DECLARE
  ids bigint[];
BEGIN
  SELECT array_agg(w.id ORDER BY w.id) INTO ids
    FROM webhook w
   WHERE ev = ANY (w.events)
     AND (w.filter_type IS NULL OR w.filter_type = t.task)
     AND (w.filter_group IS NULL OR w.filter_group = t.group_)
     AND (w.filter_task IS NULL OR w.filter_task = t.id);
  IF ids IS NULL THEN
    RETURN 0;
  END IF;
  INSERT INTO webhook_event (event, subjects, webhook_ids, at, payload)
    VALUES (ev, ARRAY[t.id::text], ids, ev_at, jobclock_webhook_task(t, ev_status));
  PERFORM pg_notify('jobclock_deliveries', '');
  RETURN cardinality(ids);
END;
$function$;

CREATE OR REPLACE FUNCTION public.jobclock_webhook_task_events()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
  success boolean := NEW.consecutive_failures = 0
                     AND (OLD.consecutive_failures > 0 OR NEW.last_success_at IS DISTINCT FROM OLD.last_success_at);
  was_overdue boolean := OLD.overdue_announced_at IS NOT NULL AND OLD.overdue_announced_at = OLD.overdue_at;
BEGIN
  IF success THEN
    NEW.overdue_announced_at := NULL;
    IF OLD.consecutive_failures > 0 OR was_overdue THEN
      PERFORM jobclock_webhook_task_event(NEW, 'task.recovered', 'ok', coalesce(NEW.last_success_at, NEW.updated));
    END IF;
  ELSIF OLD.consecutive_failures = 0 AND NEW.consecutive_failures > 0 THEN
    PERFORM jobclock_webhook_task_event(NEW, 'task.failing', 'failing', coalesce(NEW.last_failure_at, NEW.updated));
  END IF;
  RETURN NEW;
END;
$function$;

-- Tables

CREATE TABLE flow_default (
  kind text NOT NULL,
  concurrency integer,
  updated_at timestamp with time zone NOT NULL,
  rate_limit integer,
  rate_window_ms bigint
);

CREATE TABLE flow_policy (
  kind text NOT NULL,
  name text NOT NULL,
  paused boolean DEFAULT false NOT NULL,
  concurrency integer,
  rate_limit integer,
  rate_window_ms bigint,
  updated_at timestamp with time zone NOT NULL
);

CREATE TABLE flow_slot (
  kind text NOT NULL,
  name text NOT NULL,
  n integer NOT NULL,
  job_id bigint,
  released_at timestamp with time zone
) WITH (autovacuum_vacuum_cost_delay=0, autovacuum_vacuum_scale_factor=0, autovacuum_vacuum_threshold=1000, fillfactor=70);

CREATE TABLE flow_token (
  kind text NOT NULL,
  name text NOT NULL,
  n integer NOT NULL,
  used_at timestamp with time zone
) WITH (autovacuum_vacuum_cost_delay=0, autovacuum_vacuum_scale_factor=0, autovacuum_vacuum_threshold=1000, fillfactor=70);

CREATE TABLE job (
  id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
  type text NOT NULL,
  group_ text DEFAULT 'default'::text NOT NULL,
  args jsonb,
  subject text,
  submitter text,
  priority integer DEFAULT 0 NOT NULL,
  state text DEFAULT 'queued'::text NOT NULL,
  run_at timestamp with time zone NOT NULL,
  attempts integer DEFAULT 0 NOT NULL,
  max_attempts integer DEFAULT 3 NOT NULL,
  unique_key text,
  periodic_task_id text,
  scheduled_at timestamp with time zone,
  timebox bigint,
  run_interval bigint,
  run_tolerance bigint,
  worker text,
  lease_token uuid,
  lease_expires_at timestamp with time zone,
  lease_duration bigint,
  started_at timestamp with time zone,
  deadline timestamp with time zone,
  finished_at timestamp with time zone,
  progress jsonb,
  result jsonb,
  error jsonb,
  created_at timestamp with time zone DEFAULT now() NOT NULL,
  updated_at timestamp with time zone DEFAULT now() NOT NULL,
  traceparent text,
  holds_slot boolean DEFAULT false NOT NULL,
  checkpoint jsonb,
  start_by timestamp with time zone,
  watched boolean DEFAULT false NOT NULL,
  debounce_key text,
  debounce_until timestamp with time zone,
  after_ids bigint[],
  deps_pending integer,
  dependency_failure_runs boolean DEFAULT false NOT NULL,
  has_dependents boolean DEFAULT false NOT NULL,
  group_default boolean DEFAULT false NOT NULL
) WITH (autovacuum_analyze_scale_factor=0.05, autovacuum_analyze_threshold=50000, autovacuum_vacuum_cost_delay=0, autovacuum_vacuum_insert_scale_factor=0, autovacuum_vacuum_insert_threshold=100000, autovacuum_vacuum_scale_factor=0, autovacuum_vacuum_threshold=20000, vacuum_index_cleanup=on);

CREATE TABLE job_dependency (
  depends_on bigint NOT NULL,
  job_id bigint NOT NULL
);

CREATE TABLE job_event (
  id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
  job_id bigint NOT NULL,
  at timestamp with time zone NOT NULL,
  kind text NOT NULL,
  attempt integer,
  worker text,
  actor text,
  detail jsonb
);

CREATE TABLE job_search (
  id bigint NOT NULL,
  type text NOT NULL,
  group_ text NOT NULL,
  worker text,
  args jsonb,
  text text NOT NULL
) PARTITION BY RANGE (id);

CREATE TABLE job_search_sealed (
  lo bigint NOT NULL,
  hi bigint NOT NULL,
  sealed_at timestamp with time zone DEFAULT now() NOT NULL,
  copied_at timestamp with time zone
);

CREATE TABLE job_type_defaults (
  type text NOT NULL,
  max_attempts integer,
  timebox bigint,
  lease bigint,
  priority integer,
  start_within bigint,
  updated_at timestamp with time zone NOT NULL
);

CREATE TABLE jobclock_migration_checksum (
  name text NOT NULL,
  sha256 text NOT NULL,
  recorded_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE kysely_migration (
  name character varying(255) NOT NULL,
  timestamp character varying(255) NOT NULL
);

CREATE TABLE kysely_migration_lock (
  id character varying(255) NOT NULL,
  is_locked integer DEFAULT 0 NOT NULL
);

CREATE TABLE periodic_slot (
  task_id text NOT NULL,
  slot timestamp with time zone NOT NULL,
  last_slot timestamp with time zone NOT NULL,
  slots integer DEFAULT 1 NOT NULL,
  outcome text NOT NULL,
  job_id bigint,
  timer text,
  timezone text,
  anchor timestamp with time zone,
  first_run_at timestamp with time zone,
  recorded_at timestamp with time zone NOT NULL
);

CREATE TABLE periodic_task (
  id text NOT NULL,
  enabled boolean DEFAULT true NOT NULL,
  task text NOT NULL,
  group_ text DEFAULT 'default'::text NOT NULL,
  args jsonb,
  subject text,
  submitter text,
  priority integer DEFAULT 0 NOT NULL,
  owner text,
  timer text NOT NULL,
  timezone text DEFAULT 'UTC'::text NOT NULL,
  first_run_at timestamp with time zone,
  tolerance bigint,
  timebox bigint,
  concurrency_policy text DEFAULT 'forbid'::text NOT NULL,
  worker text,
  marked timestamp with time zone,
  nextrun timestamp with time zone,
  last_run timestamp with time zone,
  state jsonb,
  created timestamp with time zone DEFAULT now() NOT NULL,
  updated timestamp with time zone DEFAULT now() NOT NULL,
  misfire_policy text DEFAULT 'coalesce'::text NOT NULL,
  catch_up_limit integer DEFAULT 10 NOT NULL,
  max_attempts integer DEFAULT 1 NOT NULL,
  catch_up_window bigint,
  end_at timestamp with time zone,
  alert_after bigint,
  last_success_at timestamp with time zone,
  last_failure_at timestamp with time zone,
  consecutive_failures integer DEFAULT 0 NOT NULL,
  overdue_at timestamp with time zone,
  overdue_announced_at timestamp with time zone
);

CREATE TABLE push_type (
  type text NOT NULL,
  url text NOT NULL,
  secret text NOT NULL,
  timeout_ms bigint NOT NULL,
  created_at timestamp with time zone NOT NULL,
  updated_at timestamp with time zone NOT NULL
);

CREATE TABLE webhook (
  id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
  url text NOT NULL,
  events text[] NOT NULL,
  filter_type text,
  filter_group text,
  filter_task text,
  secret text NOT NULL,
  created_at timestamp with time zone NOT NULL,
  updated_at timestamp with time zone NOT NULL
);

CREATE TABLE webhook_delivery (
  id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
  webhook_id bigint NOT NULL,
  event text NOT NULL,
  subject text NOT NULL,
  at timestamp with time zone NOT NULL,
  payload jsonb,
  status text DEFAULT 'pending'::text NOT NULL,
  attempts integer DEFAULT 0 NOT NULL,
  next_attempt_at timestamp with time zone,
  last_status_code integer,
  last_error text,
  created_at timestamp with time zone NOT NULL,
  delivered_at timestamp with time zone,
  held_until timestamp with time zone
) WITH (autovacuum_vacuum_scale_factor=0.05, fillfactor=80);

CREATE TABLE webhook_event (
  id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
  event text NOT NULL,
  subjects text[] NOT NULL,
  webhook_ids bigint[] NOT NULL,
  at timestamp with time zone NOT NULL,
  payload jsonb
) WITH (autovacuum_vacuum_scale_factor=0.05);

CREATE TABLE job_search_default PARTITION OF job_search DEFAULT WITH (autovacuum_vacuum_insert_threshold=-1);

CREATE TABLE job_search_p0 PARTITION OF job_search FOR VALUES FROM ('0') TO ('1000000') WITH (autovacuum_vacuum_insert_threshold=-1);

CREATE TABLE job_search_p1000000 PARTITION OF job_search FOR VALUES FROM ('1000000') TO ('2000000') WITH (autovacuum_vacuum_insert_threshold=-1);

CREATE TABLE job_search_p2000000 PARTITION OF job_search FOR VALUES FROM ('2000000') TO ('3000000') WITH (autovacuum_vacuum_insert_threshold=-1);

-- Constraints

ALTER TABLE ONLY flow_default ADD CONSTRAINT flow_default_pkey PRIMARY KEY (kind);
ALTER TABLE ONLY flow_default ADD CONSTRAINT flow_default_concurrency_check CHECK ((concurrency >= 1));
ALTER TABLE ONLY flow_default ADD CONSTRAINT flow_default_kind_check CHECK ((kind = 'group'::text));
ALTER TABLE ONLY flow_default ADD CONSTRAINT flow_default_rate_limit_check CHECK ((rate_limit >= 1));
ALTER TABLE ONLY flow_default ADD CONSTRAINT flow_default_rate_pair CHECK (((rate_limit IS NULL) = (rate_window_ms IS NULL)));
ALTER TABLE ONLY flow_default ADD CONSTRAINT flow_default_rate_window_ms_check CHECK ((rate_window_ms >= 1));
ALTER TABLE ONLY flow_policy ADD CONSTRAINT flow_policy_pkey PRIMARY KEY (kind, name);
ALTER TABLE ONLY flow_policy ADD CONSTRAINT flow_policy_check CHECK (((rate_limit IS NULL) = (rate_window_ms IS NULL)));
ALTER TABLE ONLY flow_policy ADD CONSTRAINT flow_policy_concurrency_check CHECK ((concurrency >= 1));
ALTER TABLE ONLY flow_policy ADD CONSTRAINT flow_policy_kind_check CHECK ((kind = ANY (ARRAY['type'::text, 'group'::text])));
ALTER TABLE ONLY flow_policy ADD CONSTRAINT flow_policy_name_check CHECK (((length(name) >= 1) AND (length(name) <= 200)));
ALTER TABLE ONLY flow_policy ADD CONSTRAINT flow_policy_rate_limit_check CHECK ((rate_limit >= 1));
ALTER TABLE ONLY flow_policy ADD CONSTRAINT flow_policy_rate_window_ms_check CHECK ((rate_window_ms >= 1));
ALTER TABLE ONLY flow_slot ADD CONSTRAINT flow_slot_pkey PRIMARY KEY (kind, name, n);
ALTER TABLE ONLY flow_token ADD CONSTRAINT flow_token_pkey PRIMARY KEY (kind, name, n);
ALTER TABLE ONLY job ADD CONSTRAINT job_pkey PRIMARY KEY (id);
ALTER TABLE ONLY job ADD CONSTRAINT job_attempts_check CHECK ((attempts >= 0));
ALTER TABLE ONLY job ADD CONSTRAINT job_check CHECK (((state <> 'running'::text) OR (lease_token IS NOT NULL)));
ALTER TABLE ONLY job ADD CONSTRAINT job_lease_duration_check CHECK ((lease_duration > 0));
ALTER TABLE ONLY job ADD CONSTRAINT job_state_check CHECK ((state = ANY (ARRAY['waiting'::text, 'queued'::text, 'running'::text, 'finished'::text, 'failed'::text, 'dropped'::text, 'cancelled'::text])));
ALTER TABLE ONLY job ADD CONSTRAINT job_periodic_task_id_fkey FOREIGN KEY (periodic_task_id) REFERENCES periodic_task(id) ON DELETE SET NULL;
ALTER TABLE ONLY job_dependency ADD CONSTRAINT job_dependency_pkey PRIMARY KEY (depends_on, job_id);
ALTER TABLE ONLY job_event ADD CONSTRAINT job_event_pkey PRIMARY KEY (id);
ALTER TABLE ONLY job_search ADD CONSTRAINT job_search_pkey PRIMARY KEY (id);
ALTER TABLE ONLY job_search_sealed ADD CONSTRAINT job_search_sealed_pkey PRIMARY KEY (lo);
ALTER TABLE ONLY job_type_defaults ADD CONSTRAINT job_type_defaults_pkey PRIMARY KEY (type);
ALTER TABLE ONLY job_type_defaults ADD CONSTRAINT job_type_defaults_lease_check CHECK ((lease > 0));
ALTER TABLE ONLY job_type_defaults ADD CONSTRAINT job_type_defaults_max_attempts_check CHECK ((max_attempts >= 1));
ALTER TABLE ONLY job_type_defaults ADD CONSTRAINT job_type_defaults_start_within_check CHECK ((start_within > 0));
ALTER TABLE ONLY job_type_defaults ADD CONSTRAINT job_type_defaults_timebox_check CHECK ((timebox > 0));
ALTER TABLE ONLY job_type_defaults ADD CONSTRAINT job_type_defaults_type_check CHECK (((length(type) >= 1) AND (length(type) <= 200)));
ALTER TABLE ONLY jobclock_migration_checksum ADD CONSTRAINT jobclock_migration_checksum_pkey PRIMARY KEY (name);
ALTER TABLE ONLY kysely_migration ADD CONSTRAINT kysely_migration_pkey PRIMARY KEY (name);
ALTER TABLE ONLY kysely_migration_lock ADD CONSTRAINT kysely_migration_lock_pkey PRIMARY KEY (id);
ALTER TABLE ONLY periodic_slot ADD CONSTRAINT periodic_slot_pkey PRIMARY KEY (task_id, slot, outcome);
ALTER TABLE ONLY periodic_slot ADD CONSTRAINT periodic_slot_check CHECK ((last_slot >= slot));
ALTER TABLE ONLY periodic_slot ADD CONSTRAINT periodic_slot_outcome_check CHECK ((outcome = ANY (ARRAY['skipped'::text, 'missed'::text, 'triggered'::text])));
ALTER TABLE ONLY periodic_slot ADD CONSTRAINT periodic_slot_slots_check CHECK ((slots >= 1));
ALTER TABLE ONLY periodic_slot ADD CONSTRAINT periodic_slot_task_id_fkey FOREIGN KEY (task_id) REFERENCES periodic_task(id) ON DELETE CASCADE;
ALTER TABLE ONLY periodic_task ADD CONSTRAINT periodic_task_pkey PRIMARY KEY (id);
ALTER TABLE ONLY periodic_task ADD CONSTRAINT periodic_task_alert_after_check CHECK ((alert_after > 0));
ALTER TABLE ONLY periodic_task ADD CONSTRAINT periodic_task_catch_up_limit_check CHECK (((catch_up_limit >= 1) AND (catch_up_limit <= 1000)));
ALTER TABLE ONLY periodic_task ADD CONSTRAINT periodic_task_catch_up_window_check CHECK ((catch_up_window > 0));
ALTER TABLE ONLY periodic_task ADD CONSTRAINT periodic_task_check CHECK (((worker IS NULL) = (marked IS NULL)));
ALTER TABLE ONLY periodic_task ADD CONSTRAINT periodic_task_concurrency_policy_check CHECK ((concurrency_policy = ANY (ARRAY['forbid'::text, 'allow'::text, 'replace'::text])));
ALTER TABLE ONLY periodic_task ADD CONSTRAINT periodic_task_consecutive_failures_check CHECK ((consecutive_failures >= 0));
ALTER TABLE ONLY periodic_task ADD CONSTRAINT periodic_task_group__check CHECK (((length(group_) >= 1) AND (length(group_) <= 200)));
ALTER TABLE ONLY periodic_task ADD CONSTRAINT periodic_task_id_check CHECK ((id ~ '^[A-Za-z0-9._:-]{1,200}$'::text));
ALTER TABLE ONLY periodic_task ADD CONSTRAINT periodic_task_max_attempts_check CHECK (((max_attempts >= 1) AND (max_attempts <= 100)));
ALTER TABLE ONLY periodic_task ADD CONSTRAINT periodic_task_misfire_policy_check CHECK ((misfire_policy = ANY (ARRAY['coalesce'::text, 'skip'::text, 'catch-up'::text])));
ALTER TABLE ONLY periodic_task ADD CONSTRAINT periodic_task_owner_check CHECK (((length(owner) >= 1) AND (length(owner) <= 200)));
ALTER TABLE ONLY periodic_task ADD CONSTRAINT periodic_task_task_check CHECK (((length(task) >= 1) AND (length(task) <= 200)));
ALTER TABLE ONLY periodic_task ADD CONSTRAINT periodic_task_timebox_check CHECK ((timebox > 0));
ALTER TABLE ONLY periodic_task ADD CONSTRAINT periodic_task_tolerance_check CHECK ((tolerance >= 0));
ALTER TABLE ONLY push_type ADD CONSTRAINT push_type_pkey PRIMARY KEY (type);
ALTER TABLE ONLY push_type ADD CONSTRAINT push_type_timeout_ms_check CHECK (((timeout_ms >= 1) AND (timeout_ms <= 900000)));
ALTER TABLE ONLY push_type ADD CONSTRAINT push_type_url_check CHECK ((url ~* '^https?://'::text));
ALTER TABLE ONLY webhook ADD CONSTRAINT webhook_pkey PRIMARY KEY (id);
ALTER TABLE ONLY webhook ADD CONSTRAINT webhook_events_check CHECK (((cardinality(events) > 0) AND (events <@ ARRAY['job.finished'::text, 'job.failed'::text, 'job.dropped'::text, 'job.cancelled'::text, 'task.failing'::text, 'task.overdue'::text, 'task.recovered'::text])));
ALTER TABLE ONLY webhook ADD CONSTRAINT webhook_url_check CHECK ((url ~* '^https?://'::text));
ALTER TABLE ONLY webhook_delivery ADD CONSTRAINT webhook_delivery_pkey PRIMARY KEY (id);
ALTER TABLE ONLY webhook_delivery ADD CONSTRAINT webhook_delivery_check CHECK (((status = 'pending'::text) = (next_attempt_at IS NOT NULL)));
ALTER TABLE ONLY webhook_delivery ADD CONSTRAINT webhook_delivery_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'delivered'::text, 'failed'::text])));
ALTER TABLE ONLY webhook_event ADD CONSTRAINT webhook_event_pkey PRIMARY KEY (id);
ALTER TABLE ONLY webhook_event ADD CONSTRAINT webhook_event_subjects_check CHECK ((cardinality(subjects) > 0));
ALTER TABLE ONLY webhook_event ADD CONSTRAINT webhook_event_webhook_ids_check CHECK ((cardinality(webhook_ids) > 0));

-- Indexes

CREATE INDEX flow_slot_default_free_idx ON public.flow_slot USING btree (released_at) WHERE ((kind = 'default-group'::text) AND (job_id IS NULL));
CREATE INDEX flow_slot_default_held_idx ON public.flow_slot USING btree (name) WHERE ((kind = 'default-group'::text) AND (job_id IS NOT NULL));
CREATE INDEX flow_slot_free_idx ON public.flow_slot USING btree (kind, name, n) WHERE (job_id IS NULL);
CREATE INDEX flow_slot_job_idx ON public.flow_slot USING btree (job_id) WHERE (job_id IS NOT NULL);
CREATE INDEX flow_token_default_used_idx ON public.flow_token USING btree (used_at) WHERE (kind = 'default-group'::text);
CREATE INDEX flow_token_free_idx ON public.flow_token USING btree (kind, name, used_at NULLS FIRST, n);
CREATE INDEX job_attention_idx ON public.job USING btree (state, id) WHERE (state = ANY (ARRAY['failed'::text, 'dropped'::text, 'cancelled'::text]));
CREATE INDEX job_attention_type_idx ON public.job USING btree (type, state, id) WHERE (state = ANY (ARRAY['failed'::text, 'dropped'::text, 'cancelled'::text]));
CREATE INDEX job_deadline_idx ON public.job USING btree (deadline) WHERE ((state = 'running'::text) AND (deadline IS NOT NULL));
CREATE UNIQUE INDEX job_debounce_key_idx ON public.job USING btree (debounce_key) WHERE ((state = 'queued'::text) AND (debounce_until IS NOT NULL));
CREATE INDEX job_default_ended_idx ON public.job USING btree (hashtext(group_), group_, finished_at DESC) WHERE (group_default AND (finished_at IS NOT NULL));
CREATE INDEX job_default_running_idx ON public.job USING btree (hashtext(group_), group_) WHERE (group_default AND COALESCE((state = 'running'::text), false));
CREATE INDEX job_fair_idx ON public.job USING btree (priority DESC, hashtext(group_), group_, run_at, id) WHERE (state = 'queued'::text);
CREATE INDEX job_fair_type_idx ON public.job USING btree (type, priority DESC, hashtext(group_), group_, run_at, id) WHERE (state = 'queued'::text);
CREATE INDEX job_final_id_idx ON public.job USING btree (id) WHERE (state = ANY (ARRAY['finished'::text, 'failed'::text, 'dropped'::text, 'cancelled'::text]));
CREATE INDEX job_finished_idx ON public.job USING btree (finished_at) WHERE (state = ANY (ARRAY['finished'::text, 'failed'::text, 'dropped'::text, 'cancelled'::text]));
CREATE INDEX job_lease_expiry_idx ON public.job USING btree (lease_expires_at) WHERE (state = 'running'::text);
CREATE INDEX job_open_by_task_idx ON public.job USING btree (periodic_task_id) WHERE ((periodic_task_id IS NOT NULL) AND (state = ANY (ARRAY['queued'::text, 'running'::text])));
CREATE UNIQUE INDEX job_periodic_slot_key ON public.job USING btree (periodic_task_id, scheduled_at) WHERE (periodic_task_id IS NOT NULL);
CREATE INDEX job_queued_id_idx ON public.job USING btree (id) WHERE (state = 'queued'::text);
CREATE INDEX job_queued_run_at_idx ON public.job USING btree (run_at) WHERE (state = 'queued'::text);
CREATE INDEX job_start_by_idx ON public.job USING btree (start_by) WHERE ((state = 'queued'::text) AND (start_by IS NOT NULL));
CREATE INDEX job_task_idx ON public.job USING btree (periodic_task_id, id) WHERE (periodic_task_id IS NOT NULL);
CREATE INDEX job_unique_key_created_idx ON public.job USING btree (unique_key, created_at DESC) WHERE (unique_key IS NOT NULL);
CREATE UNIQUE INDEX job_unique_key_idx ON public.job USING btree (unique_key) WHERE ((unique_key IS NOT NULL) AND (state = ANY (ARRAY['queued'::text, 'running'::text])));
CREATE INDEX job_waiting_id_idx ON public.job USING btree (id) WHERE (state = 'waiting'::text);
CREATE INDEX job_event_job_idx ON public.job_event USING btree (job_id, id);
CREATE INDEX job_search_args_idx ON ONLY public.job_search USING gin (args jsonb_path_ops) WITH (gin_pending_list_limit='512');
CREATE INDEX job_search_group_idx ON ONLY public.job_search USING btree (group_, id);
CREATE INDEX job_search_text_idx ON ONLY public.job_search USING gin (text gin_trgm_ops);
CREATE INDEX job_search_type_idx ON ONLY public.job_search USING btree (type, id);
CREATE INDEX job_search_worker_idx ON ONLY public.job_search USING btree (worker, id) WHERE (worker IS NOT NULL);
CREATE INDEX periodic_slot_recorded_idx ON public.periodic_slot USING btree (recorded_at);
CREATE INDEX periodic_task_disabled_idx ON public.periodic_task USING btree (id) WHERE (NOT enabled);
CREATE INDEX periodic_task_due_idx ON public.periodic_task USING btree (nextrun) WHERE (enabled AND (nextrun IS NOT NULL));
CREATE INDEX periodic_task_failing_idx ON public.periodic_task USING btree (id) WHERE (consecutive_failures > 0);
CREATE INDEX periodic_task_marked_idx ON public.periodic_task USING btree (marked) WHERE (marked IS NOT NULL);
CREATE INDEX periodic_task_overdue_idx ON public.periodic_task USING btree (overdue_at, id) WHERE (overdue_at IS NOT NULL);
CREATE INDEX periodic_task_overdue_unannounced_idx ON public.periodic_task USING btree (overdue_at) WHERE ((overdue_at IS NOT NULL) AND (overdue_announced_at IS DISTINCT FROM overdue_at));
CREATE INDEX periodic_task_owner_idx ON public.periodic_task USING btree (owner, id) WHERE (owner IS NOT NULL);
CREATE INDEX periodic_task_task_idx ON public.periodic_task USING btree (task, id);
CREATE INDEX webhook_delivery_done_idx ON public.webhook_delivery USING btree (created_at) WHERE (status <> 'pending'::text);
CREATE INDEX webhook_delivery_due_idx ON public.webhook_delivery USING btree (next_attempt_at) WHERE (status = 'pending'::text);
CREATE INDEX webhook_delivery_webhook_idx ON public.webhook_delivery USING btree (webhook_id, id);

-- Triggers

CREATE TRIGGER job_fixed_columns_checked AFTER INSERT OR UPDATE OF type, group_, unique_key, debounce_key, traceparent, max_attempts, timebox, run_interval, run_tolerance ON public.job FOR EACH ROW WHEN ((((length(new.type) < 1) OR (length(new.type) > 200)) OR ((length(new.group_) < 1) OR (length(new.group_) > 200)) OR ((length(new.unique_key) < 1) OR (length(new.unique_key) > 200)) OR ((length(new.debounce_key) < 1) OR (length(new.debounce_key) > 200)) OR (length(new.traceparent) > 55) OR (new.max_attempts < 1) OR (new.timebox <= 0) OR (new.run_interval <= 0) OR (new.run_tolerance < 0))) EXECUTE FUNCTION jobclock_job_refused();
CREATE TRIGGER job_inserted_notify AFTER INSERT ON public.job FOR EACH STATEMENT EXECUTE FUNCTION jobclock_notify_job_inserted();
CREATE TRIGGER job_release_slots_on_delete AFTER DELETE ON public.job FOR EACH ROW WHEN (old.holds_slot) EXECUTE FUNCTION jobclock_release_deleted_slots();
CREATE TRIGGER job_search_on_delete AFTER DELETE ON public.job REFERENCING OLD TABLE AS jobclock_gone FOR EACH STATEMENT EXECUTE FUNCTION jobclock_search_on_delete();
CREATE TRIGGER job_search_on_insert AFTER INSERT ON public.job FOR EACH ROW WHEN ((new.state = ANY (ARRAY['finished'::text, 'failed'::text, 'dropped'::text, 'cancelled'::text]))) EXECUTE FUNCTION jobclock_search_on_insert();
CREATE TRIGGER job_state_changed AFTER UPDATE OF state ON public.job FOR EACH ROW WHEN ((((old.holds_slot AND new.holds_slot) OR new.has_dependents OR (new.periodic_task_id IS NOT NULL) OR new.watched) AND (new.state IS DISTINCT FROM old.state))) EXECUTE FUNCTION jobclock_job_state_changed();
CREATE TRIGGER job_updated AFTER UPDATE ON public.job REFERENCING OLD TABLE AS jobclock_old NEW TABLE AS jobclock_new FOR EACH STATEMENT EXECUTE FUNCTION jobclock_job_updated();
CREATE TRIGGER periodic_task_webhook_events BEFORE UPDATE OF consecutive_failures, last_success_at ON public.periodic_task FOR EACH ROW WHEN (((new.consecutive_failures IS DISTINCT FROM old.consecutive_failures) OR (new.last_success_at IS DISTINCT FROM old.last_success_at))) EXECUTE FUNCTION jobclock_webhook_task_events();
