/**
 * The lease's part for groups nobody declared (GET|PATCH /groups-default, migration 0024): with a
 * default concurrency set, a job of a group without a flow_policy row of its own runs only with a
 * permit of its group — a flow_slot row of kind 'default-group', made by the lease that first
 * needs it. Taking one is an upsert (INSERT … ON CONFLICT DO UPDATE … WHERE job_id IS NULL), so
 * two leases on any instances never both take it; the triggers that release declared slots
 * release these (job_id, holds_slot), and the reaper deletes those left free (flowDefaultReclaim).
 * Without a default, every part reads the empty flow_default and touches nothing else.
 */
import { type RawBuilder, sql } from 'kysely';

/**
 * `group_default`: the default concurrency (no row: none). `default_held`: the permits held now, read
 * once (one scan of the partial index of held permits: as many rows as such jobs running), as
 * `held` {group: [n, …]} for the look-ups below; `default_full`: the groups with every permit held,
 * left out of the lanes. Nothing else reads flow_slot by group: a plan made while the table was
 * empty (prepared statements keep theirs) would scan it whole once per candidate.
 */
export const DEFAULT_GROUP_BLOCKED = sql`
    group_default AS MATERIALIZED (
      SELECT d.concurrency FROM flow_default d WHERE d.kind = 'group' AND d.concurrency IS NOT NULL
    ),
    default_held AS MATERIALIZED (
      SELECT coalesce(jsonb_object_agg(h.name, h.ns), '{}') AS held,
             coalesce(array_agg(h.name) FILTER (WHERE cardinality(h.ns) >= (SELECT g.concurrency FROM group_default g)), '{}') AS full_groups
      FROM (
        SELECT s.name, array_agg(s.n) AS ns FROM flow_slot s
        WHERE s.kind = 'default-group' AND s.job_id IS NOT NULL AND EXISTS (SELECT 1 FROM group_default)
        GROUP BY s.name
      ) h
    ),
    default_full AS MATERIALIZED (SELECT h.full_groups AS groups FROM default_held h)`;

const undeclared = (group: RawBuilder<unknown>) =>
  sql`NOT EXISTS (SELECT 1 FROM flow_policy fp WHERE fp.kind = 'group' AND fp.name = ${group})`;

/** A lane (`p`, ranked by `turn`) of an undeclared group gives no more candidates than the default concurrency. */
export const WITHIN_DEFAULT_GROUP_SHARE = sql`(p.turn <= coalesce((SELECT g.concurrency FROM group_default g), 2147483647) OR NOT ${undeclared(sql`p.group_`)})`;

/**
 * After `refused` (the declared limits' refusals): the candidates of undeclared groups take their
 * group's free permits, the k-th candidate of a group the k-th permit free in this statement's
 * snapshot; the upsert re-checks it on the newest row version (waiting for a lease that holds it
 * uncommitted), so a permit another lease took meanwhile is refused. Jobs that this lease may drop
 * instead (past startBy; periodic jobs with a drop check) take none: a permit is taken only by a
 * job that runs. `all_refused`: both kinds of refusal.
 */
export const defaultGroupGrants = (now: RawBuilder<unknown>) => sql`
    default_needs AS MATERIALIZED (
      SELECT c.id, c.group_, c.priority, c.run_at, row_number() OVER (PARTITION BY c.group_ ORDER BY c.priority DESC, c.run_at, c.id) AS rn
      FROM candidates c
      WHERE EXISTS (SELECT 1 FROM group_default) AND c.id NOT IN (SELECT id FROM refused)
        AND (c.start_by <= ${now}) IS NOT TRUE AND NOT (c.periodic_task_id IS NOT NULL AND c.run_interval IS NOT NULL)
        AND ${undeclared(sql`c.group_`)}
    ),
    -- in order: a candidate begins only if every queued job of its group that comes before it
    -- (runAt, creation; the lanes hold the highest priority with a runnable job) is a candidate
    -- of this lease too: one that another lease holds locked (SKIP LOCKED passed it over) keeps
    -- its turn. A range of job_fair_idx per candidate.
    default_heads AS MATERIALIZED (
      SELECT d.*,
             -- the group's permits free in this statement's snapshot
             (SELECT array_agg(x.n ORDER BY x.n) FROM generate_series(1, (SELECT g.concurrency FROM group_default g)) x(n)
               WHERE NOT coalesce((SELECT h.held -> d.group_ FROM default_held h), '[]'::jsonb) @> to_jsonb(x.n)) AS ns
      FROM default_needs d
      WHERE (SELECT count(*) FROM (
               SELECT 1 FROM job j
               WHERE j.state = 'queued' AND j.priority = d.priority AND hashtext(j.group_) = hashtext(d.group_) AND j.group_ = d.group_
                 AND (j.run_at, j.id) < (d.run_at, d.id)
               LIMIT d.rn) x) < d.rn
    ),
    default_grants AS (
      INSERT INTO flow_slot AS s (kind, name, n, job_id)
      SELECT 'default-group', d.group_, d.ns[d.rn], d.id
      FROM default_heads d
      WHERE d.rn <= cardinality(d.ns)
      -- one order of row locks for every lease: two leases wait for each other, never in a cycle
      ORDER BY d.group_, d.ns[d.rn]
      ON CONFLICT (kind, name, n) DO UPDATE SET job_id = EXCLUDED.job_id WHERE s.job_id IS NULL
      RETURNING s.job_id AS id, s.released_at
    ),
    -- looked up by position (arrays), not joined: the generic plan's estimates made joins quadratic
    default_holders AS MATERIALIZED (
      SELECT coalesce(array_agg(g.id), '{}') AS ids, coalesce(array_agg(g.released_at), '{}') AS released FROM default_grants g
    ),
    all_refused AS MATERIALIZED (
      SELECT id FROM refused
      UNION
      SELECT d.id FROM default_needs d WHERE NOT d.id = ANY ((SELECT h.ids FROM default_holders h)::bigint[])
    )`;
