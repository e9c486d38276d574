-- The groups default's concurrency (PATCH /groups-default {"concurrency": n}) counted from the
-- jobs themselves instead of permit rows. A lease wrote a flow_slot row per job begun in a group
-- nobody declared (inserted or taken, with three index entries), the report freed it (three more)
-- and the reaper deleted it a minute later: two thirds of what PostgreSQL spent on a job spread over
-- 100,000 such groups (bench/README.md). Now a job begun under the default is marked
-- (job.group_default) and the lease counts a group's marked running jobs; no row is written
-- besides the job's own.
--
-- What the permit row's upsert did — make two leases that both saw a group with a place free never
-- both take it — is done by jobclock_default_admit: the lease hands it the groups of its
-- candidates; it takes a transaction-level advisory lock per group without waiting (held until the
-- lease commits, when the job it begins is visible as running) and counts, in a snapshot taken after
-- the locks (a VOLATILE function's statements take their own), the group's running jobs. A lease
-- that cannot take a group's lock leaves that group to the lease holding it and claims again.
-- The function also gives the group's last end (the latest finishedAt of its marked jobs), so a job
-- does not start before the previous one ended by the clocks of the instances that recorded both,
-- as flow_slot.released_at ensured.
--
-- Jobs running now with a default permit are marked; their permits are freed by the same triggers
-- as before and reclaimed by the reaper. An instance of an earlier release must not lease beside
-- this one while a default concurrency is set (it counts permits, this one running jobs):
-- docs/deploying.md, "Upgrading".
--
-- The row trigger on a change of state fired for every job a lease gave a permit (holds_slot set
-- by the same update), only to find nothing to release: it fires now when the job held one before
-- the update and still does (what its function looks at).
--
-- Locks: job (ACCESS EXCLUSIVE briefly to add the column, which has a constant default and so
-- rewrites nothing, and to replace the trigger; SHARE while the two indexes are built, each a read
-- of the table).

ALTER TABLE job ADD COLUMN group_default boolean NOT NULL DEFAULT false;

UPDATE job j SET group_default = true
  FROM flow_slot s
 WHERE s.kind = 'default-group' AND s.job_id = j.id AND j.state = 'running';

DROP TRIGGER job_state_changed ON job;
CREATE TRIGGER job_state_changed AFTER UPDATE OF state ON job FOR EACH ROW
  WHEN (((OLD.holds_slot AND NEW.holds_slot) OR NEW.has_dependents OR NEW.periodic_task_id IS NOT NULL OR NEW.watched)
        AND NEW.state IS DISTINCT FROM OLD.state)
  EXECUTE FUNCTION jobclock_job_state_changed();

-- the running jobs begun under the default, by group (the lanes leave out groups with every place taken)
CREATE INDEX job_default_running_idx ON job (group_) WHERE group_default AND state = 'running';
-- when each group's jobs begun under the default ended, newest first
CREATE INDEX job_default_ended_idx ON job (group_, finished_at DESC) WHERE group_default AND finished_at IS NOT NULL;

-- The lanes (migration 0031), leaving out as they walk the groups with p_default_n or more jobs
-- running under the default (when not null) that have no policy of its own: one probe of
-- job_default_running_idx per lane looked at, which finds nothing for a group without a running
-- job. Before, the lease read every such group first (as many rows as jobs running) and passed them
-- in p_blocked_groups, which each lane looked at was compared with one by one.
CREATE FUNCTION jobclock_lanes(p_types text[], p_groups text[], p_now timestamp with time zone, p_want integer, p_start integer, p_blocked_groups text[], p_default_n integer)
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
              (SELECT count(*) FROM (SELECT 1 FROM job r WHERE r.group_default AND r.state = 'running' AND r.group_ = g.name LIMIT p_default_n) x) >= p_default_n
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
              (SELECT count(*) FROM (SELECT 1 FROM job r WHERE r.group_default AND r.state = 'running' AND r.group_ = g.name LIMIT p_default_n) x) >= p_default_n
              AND NOT EXISTS (SELECT 1 FROM flow_policy fp WHERE fp.kind = 'group' AND fp.name = g.name)));
      ELSIF src IS NULL THEN
        -- the ring from p_start: each step finds the next lane's first entry, except where the
        -- next lane is the level's first (read above)
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
              (SELECT count(*) FROM (SELECT 1 FROM job r WHERE r.group_default AND r.state = 'running' AND r.group_ = w.g LIMIT p_default_n) x) >= p_default_n
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
              (SELECT count(*) FROM (SELECT 1 FROM job r WHERE r.group_default AND r.state = 'running' AND r.group_ = w.g LIMIT p_default_n) x) >= p_default_n
              AND NOT EXISTS (SELECT 1 FROM flow_policy fp WHERE fp.kind = 'group' AND fp.name = w.g)))
          LIMIT p_want;
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

-- The six-argument form, which instances of the previous release call: the same lanes.
CREATE OR REPLACE FUNCTION jobclock_lanes(p_types text[], p_groups text[], p_now timestamp with time zone, p_want integer, p_start integer, p_blocked_groups text[])
RETURNS TABLE(type text, priority integer, group_ text, hash integer, first_run_at timestamp with time zone, first_id bigint)
LANGUAGE sql STABLE
AS $$
  SELECT * FROM jobclock_lanes(p_types, p_groups, p_now, p_want, p_start, p_blocked_groups, NULL::integer)
$$;

-- For each of the groups named (distinct, at most 500 of them, as many as a claim's slots: a lease
-- holds that many advisory locks at most; beyond, a random 500) whose lock this transaction takes:
-- how many more jobs may begin (max_n minus those running under the default), and when its last job
-- begun under the default ended. A group whose lock another transaction holds is not returned. The advisory locks are of class 1245923140
-- (two-key form), keyed by hashtext(group): two groups of one hash share a lock, which only makes
-- one of them wait for a claim.
CREATE FUNCTION jobclock_default_admit(names text[], max_n integer)
RETURNS TABLE (name text, free integer, last_end timestamptz)
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off
AS $$
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
             WHERE j.group_default AND j.finished_at IS NOT NULL AND j.group_ = l.name
             ORDER BY j.group_, j.finished_at DESC LIMIT 1)
    FROM unnest(locked) l(name)
    CROSS JOIN LATERAL (
      SELECT count(*)::int AS n FROM job j WHERE j.group_default AND j.state = 'running' AND j.group_ = l.name
    ) r;
END;
$$;

REVOKE ALL ON FUNCTION jobclock_default_admit(text[], integer) FROM PUBLIC;
