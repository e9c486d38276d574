-- The lanes' walk over the hash ring of groups in batches, where the groups are small
-- (jobclock_lanes, migrations 0031, 0037).
--
-- The walk found each lane's first entry by a descent of the fairness index of its own: one step of
-- a recursive query per lane. With many groups of a job or two each (100,000 customers), a lease of
-- 100 walked 100 lanes. Where the level's first group has a single job queued, a step now reads the
-- next k entries in index order after the last group of the step before and takes the first entry
-- of each group among them as its lane; the next step starts after the batch's last group (the rest
-- of that group's entries are never read). k starts at 1, doubles (up to 64, and never beyond the
-- lanes still wanted) after a batch of distinct groups only, and falls back to 1 after a batch that
-- held two entries of one group: 100 lanes of single jobs take 7 steps. Where the first group has
-- more jobs queued (the README loop's one group; a few groups with many jobs each), the walk is the
-- one before: a batch there reads entries a descent would skip. One probe a level decides (the
-- level's second entry). The lanes, their order and every other rule are as before; the lanes found
-- are checked against the previous walk's in test/db/lanes-walk.test.ts.

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
