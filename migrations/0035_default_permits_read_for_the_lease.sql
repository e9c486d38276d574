-- What the lease reads of the permits held by groups nobody declared (groups-default concurrency).
-- jobclock_default_held() built a JSON object of every permit held, for every lease, and the lease
-- then walked all of it to find the groups with every permit held: with 400 held (four workers of
-- 100) that was 1.7 ms of a 9.5 ms lease of 100 under EXPLAIN ANALYZE (bench/README.md). Now the
-- full groups come as an array from one grouped scan of the held permits' index, and the permit
-- numbers held are read only for the groups of the lease's candidates. jobclock_default_held stays
-- for instances of the previous release.
--
-- Locks: none beyond creating two functions.

-- The groups with at least max_n permits held (flow_slot_default_held_idx, by name).
CREATE FUNCTION jobclock_default_full(max_n integer) RETURNS text[]
LANGUAGE sql STABLE
SET enable_seqscan = off
AS $$
  SELECT coalesce(array_agg(h.name), '{}')
  FROM (
    SELECT s.name FROM flow_slot s
    WHERE s.kind = 'default-group' AND s.job_id IS NOT NULL
    GROUP BY s.name
    HAVING count(*) >= max_n
  ) h
$$;

-- The permits held of the groups named, by group: {group: [n, …]} (flow_slot_default_held_idx).
CREATE FUNCTION jobclock_default_held_of(names text[]) RETURNS jsonb
LANGUAGE sql STABLE
SET enable_seqscan = off
AS $$
  SELECT coalesce(jsonb_object_agg(h.name, h.ns), '{}')
  FROM (
    SELECT s.name, array_agg(s.n) AS ns FROM flow_slot s
    WHERE s.kind = 'default-group' AND s.job_id IS NOT NULL AND s.name = ANY (names)
    GROUP BY s.name
  ) h
$$;
