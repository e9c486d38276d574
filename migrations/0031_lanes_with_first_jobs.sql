-- The lanes of a lease (migration 0008's jobclock_fair_lanes), each with its first job: the
-- first (run_at, id) of the lane visible to the lease's snapshot.
--
-- Why: a queue's index keeps the entries of the jobs that left it (leased, then finished) until
-- VACUUM removes them, and they sit at the head of each lane, where every scan of the lane begins.
-- A lease walked over them three times: to find the highest priority, to find the lane, and to
-- claim the lane's jobs. Now the claim starts at the lane's first job (an index descent to
-- (run_at, id), not a walk), and the walk over the lanes reuses what finding the priority read: the
-- first entry of the highest priority is also the first lane of the hash ring at that priority.
-- With one group, a lease reads the dead head of its queue once, as pg-boss's fetch does.
--
-- jobclock_fair_lanes stays for instances of the previous release still running during a rolling
-- upgrade; a later migration drops it.

CREATE FUNCTION jobclock_lanes(p_types text[], p_groups text[], p_now timestamptz, p_want integer, p_start integer,
                               p_blocked_groups text[])
RETURNS TABLE (type text, priority integer, group_ text, hash integer, first_run_at timestamptz, first_id bigint)
LANGUAGE plpgsql STABLE AS $$
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
          WHERE NOT (g.name = ANY (p_blocked_groups)) AND f.run_at < due;
      ELSIF p_groups IS NOT NULL THEN
        RETURN QUERY
          SELECT src, lvl, g.name, hashtext(g.name), f.run_at, f.id FROM unnest(p_groups) AS g(name)
          CROSS JOIN LATERAL (
            SELECT j.run_at, j.id FROM job j
            WHERE j.state = 'queued' AND j.type = src AND j.priority = lvl
              AND hashtext(j.group_) = hashtext(g.name) AND j.group_ = g.name
            ORDER BY j.type, j.priority DESC, hashtext(j.group_), j.group_, j.run_at, j.id LIMIT 1) f
          WHERE NOT (g.name = ANY (p_blocked_groups)) AND f.run_at < due;
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
          WHERE w.run_at < due AND NOT (w.g = ANY (p_blocked_groups))
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
          WHERE w.run_at < due AND NOT (w.g = ANY (p_blocked_groups))
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
$$;
