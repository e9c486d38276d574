-- The groups default (migration 0036), cheaper per job.
--
-- 1. Its two indexes lead with the group's hash, as the fairness indexes do. Keyed by the group's
--    name alone, every step down the tree compared two names by the database's collation (strcoll:
--    the names differ, so the byte-equality shortcut does not apply), on every lease's probes and
--    every job's entries: with 100,000 groups that was ~10 % of the lease (bench/README.md). Led by
--    hashtext(group_), the names are compared only where the hashes are equal: the same group, or
--    rarely two groups of one hash. Every query of them says hashtext(group_) = hashtext(name) AND
--    group_ = name; jobclock_lanes and jobclock_default_admit are replaced to say so (an instance
--    of the previous release calls them as before).
--
--    The running jobs' index is partial on `group_default AND coalesce(state = 'running', false)`
--    and its queries say the same (state is never null: the coalesce changes nothing but the
--    planner's view). Said as `state = 'running'`, their condition also fits job_lease_expiry_idx
--    (every running job): with statistics taken while no job ran under the default — a new
--    database, or one just upgraded — the planner rated a whole scan of that index as cheap as a
--    probe of this one, took it, and each probe read every running job (in the benchmark of
--    100,000 groups: five times the buffers of the lease).
--
-- 2. The slim claim's admission in one call that answers for each candidate (lease-slim.ts):
--    jobclock_default_admit answers by group, and the claim then looked each candidate's group up
--    among the answers (a comparison of names per candidate and group: 10,000 for a lease of 100
--    over as many groups) and joined the admitted back by id. jobclock_default_starts takes the
--    candidates as arrays in the claim's order — their groups, their rank within their group in
--    this claim (1 for the first), and whether each is in order (no queued job of its group comes
--    before it that is not a candidate too) — and gives back an array in the same order: when the
--    candidate starts (`at`, or later when its group's last job begun under the default ended later
--    by the clock that recorded it), or null where it may not begin. Its rules are
--    jobclock_default_admit's: a transaction-level advisory lock of class 1245923140 per group,
--    keyed by hashtext(group) and taken without waiting (a group another lease holds is refused here
--    and claimed again), then the group's running jobs counted in a statement of its own, whose
--    snapshot is taken after the locks and sees every lease that held one of them committed. A
--    candidate out of order, or ranked beyond the default, takes no lock. The full statement takes
--    the same locks: the two exclude each other. A claim has at most 500 candidates (a combined
--    claim's slots), so a lease holds at most 500 such locks (docs/flow-control.md).
--
-- Locks: job (SHARE while the two indexes are built, each a read of the table).

DROP INDEX job_default_running_idx;
DROP INDEX job_default_ended_idx;
-- the running jobs begun under the default, by group (the lanes leave out groups with every place taken)
CREATE INDEX job_default_running_idx ON job (hashtext(group_), group_) WHERE group_default AND coalesce(state = 'running', false);
-- when each group's jobs begun under the default ended, newest first
CREATE INDEX job_default_ended_idx ON job (hashtext(group_), group_, finished_at DESC) WHERE group_default AND finished_at IS NOT NULL;

-- The lanes (migration 0036) with the probe of job_default_running_idx led by the group's hash.
CREATE OR REPLACE FUNCTION jobclock_lanes(p_types text[], p_groups text[], p_now timestamp with time zone, p_want integer, p_start integer, p_blocked_groups text[], p_default_n integer)
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

-- jobclock_default_admit (migration 0036) with both probes led by the group's hash.
CREATE OR REPLACE FUNCTION jobclock_default_admit(names text[], max_n integer)
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
             WHERE j.group_default AND j.finished_at IS NOT NULL AND hashtext(j.group_) = hashtext(l.name) AND j.group_ = l.name
             ORDER BY hashtext(j.group_), j.group_, j.finished_at DESC LIMIT 1)
    FROM unnest(locked) l(name)
    CROSS JOIN LATERAL (
      SELECT count(*)::int AS n FROM job j WHERE j.group_default AND coalesce(j.state = 'running', false) AND hashtext(j.group_) = hashtext(l.name) AND j.group_ = l.name
    ) r;
END;
$$;

CREATE FUNCTION jobclock_default_starts(groups text[], ranks integer[], locked boolean[], max_n integer, at timestamptz)
RETURNS timestamptz[]
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off
AS $$
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
$$;

REVOKE ALL ON FUNCTION jobclock_default_starts(text[], integer[], boolean[], integer, timestamptz) FROM PUBLIC;
