-- Fairness between groups: among runnable jobs of equal priority, groups take turns, so one
-- group's backlog does not hold back another group's jobs; priority always wins.
--
-- A lease no longer walks one queue in (priority, run_at, id) order. It first finds the "lanes"
-- of the highest priority that has a runnable job: each group with a runnable job at that
-- priority (per type when the worker names types). Then it takes the first jobs of every lane,
-- round by round: the first job of each lane (in random order between lanes), then the second of
-- each, and so on. Within a group the order stays run_at, then creation.
--
-- Lanes are found by skipping through an index ordered by (priority, hashtext(group), group):
-- one index descent per group, never a scan of a group's backlog. The walk starts at a random
-- point of the hash ring and wraps around, so that when there are more groups than a lease looks
-- at (at most 200), every group is as likely to be looked at. No state is kept between leases:
-- no counter row that every lease would update.

CREATE INDEX job_fair_idx ON job (priority DESC, hashtext(group_), group_, run_at, id) WHERE state = 'queued';
CREATE INDEX job_fair_type_idx ON job (type, priority DESC, hashtext(group_), group_, run_at, id) WHERE state = 'queued';
-- They serve every query the plain lease indexes served: a job carries as many indexes as before.
DROP INDEX job_lease_idx;
DROP INDEX job_lease_type_idx;

-- The runnable lanes of the highest priority that has any, for each source: each type of p_types,
-- or every type when p_types is null. With p_groups, only those groups' lanes; else at most
-- p_want lanes per source, from the hash ring point p_start on. A lane is runnable when its first
-- job (in run_at order) is due at p_now and its group is not in p_blocked_groups. A level whose
-- lanes are all not runnable (scheduled for later, or blocked) is passed over for the next one
-- down; after visiting 1,000 lanes with none runnable, the level is given up for this lease.
CREATE FUNCTION jobclock_fair_lanes(p_types text[], p_groups text[], p_now timestamptz, p_want integer, p_start integer,
                                    p_blocked_groups text[])
RETURNS TABLE (type text, priority integer, group_ text, hash integer)
LANGUAGE plpgsql STABLE AS $$
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
$$;

-- Permits: a lease locks as many free permits of a key as its candidates need, found in order
-- through these indexes (not every free permit of the key: with a limit of 1,000 that does not
-- bind, that was 1,000 rows locked by every lease).
CREATE INDEX flow_slot_free_idx ON flow_slot (kind, name, n) WHERE job_id IS NULL;
CREATE INDEX flow_token_free_idx ON flow_token (kind, name, used_at NULLS FIRST, n);

-- A statement that moves jobs out of `running` and clears holds_slot itself releases their slots
-- itself, for all its rows at once (the report of a batch of jobs does): the row trigger, one
-- function call and one UPDATE per job, stands aside for it and serves every other statement.
DROP TRIGGER job_release_slots ON job;
CREATE TRIGGER job_release_slots BEFORE UPDATE OF state ON job
  FOR EACH ROW WHEN (OLD.holds_slot AND NEW.holds_slot AND NEW.state IS DISTINCT FROM 'running')
  EXECUTE FUNCTION jobclock_release_slots();
