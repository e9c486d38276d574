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
-- Locks: job (ACCESS EXCLUSIVE briefly to add the column, which has a constant default and so
-- rewrites nothing; SHARE while the two indexes are built, each a read of the table).

ALTER TABLE job ADD COLUMN group_default boolean NOT NULL DEFAULT false;

UPDATE job j SET group_default = true
  FROM flow_slot s
 WHERE s.kind = 'default-group' AND s.job_id = j.id AND j.state = 'running';

-- the running jobs begun under the default, by group (a lease reads the groups with every place taken)
CREATE INDEX job_default_running_idx ON job (group_) WHERE group_default AND state = 'running';
-- when each group's jobs begun under the default ended, newest first
CREATE INDEX job_default_ended_idx ON job (group_, finished_at DESC) WHERE group_default AND finished_at IS NOT NULL;

-- The groups with at least max_n jobs running under the default (job_default_running_idx).
CREATE FUNCTION jobclock_default_running_full(max_n integer) RETURNS text[]
LANGUAGE sql STABLE
SET enable_seqscan = off
AS $$
  SELECT coalesce(array_agg(r.group_), '{}')
  FROM (
    SELECT j.group_ FROM job j
    WHERE j.group_default AND j.state = 'running'
    GROUP BY j.group_
    HAVING count(*) >= max_n
  ) r
$$;

-- For each of the groups named (distinct, at most 128 of them: a lease holds that many advisory
-- locks at most) whose lock this transaction takes: how many more jobs may begin (max_n minus those
-- running under the default), and when its last job begun under the default ended. A group whose
-- lock another transaction holds is not returned. The advisory locks are of class 1245923140
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
  FROM (SELECT DISTINCT u.name FROM unnest(names) u(name) WHERE u.name IS NOT NULL ORDER BY u.name LIMIT 128) g
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

REVOKE ALL ON FUNCTION jobclock_default_running_full(integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobclock_default_admit(text[], integer) FROM PUBLIC;
