/**
 * The lease's part for groups nobody declared (GET|PATCH /groups-default, migrations 0024, 0027).
 * With a default concurrency set, a job of a group without a flow_policy row of its own runs only
 * with a permit of its group — a flow_slot row of kind 'default-group', made by the lease that first
 * needs it. Taking one is an upsert (INSERT … ON CONFLICT DO UPDATE … WHERE job_id IS NULL), so
 * two leases on any instances never both take it; the triggers that release declared slots
 * release these (job_id, holds_slot), and the reaper deletes those left free (groupsDefaultReclaim).
 * With a default rate set, such a job also takes a token of its group — a flow_token row of kind
 * 'default-group', made the same way and taken by an upsert that re-checks, on the newest version
 * of the row, that it was last used a whole window ago. A job takes its token first, then its
 * permit: when a racing lease took the permit first, the token is spent unused (the rate holds; a
 * permit is never held by a job that does not run).
 * Without a default, every part reads the empty flow_default and touches nothing else.
 */
import { type RawBuilder, sql } from 'kysely';

const undeclared = (group: RawBuilder<unknown>) =>
  sql`NOT EXISTS (SELECT 1 FROM flow_policy fp WHERE fp.kind = 'group' AND fp.name = ${group})`;

/**
 * `group_policy`: the default (no row: none), read once; `group_default`: its concurrency,
 * `group_rate`: its rate. `default_held_full`: the groups with every permit held, read once
 * (jobclock_default_full: one grouped scan of the partial index of held permits, as many rows as
 * such jobs running; the permit numbers held are read later, for the candidates' groups only);
 * `default_used`: the tokens used within the window, read once
 * (jobclock_default_used: a range of the partial index by used_at), as `used` {group: [n, …]}; `default_full`: the groups with every permit held or every
 * token used, left out of the lanes (unless they declared a policy of their own since). Nothing
 * else reads flow_slot or flow_token by group: a plan made while a table was empty (prepared
 * statements keep theirs) would scan it whole once per candidate. The cost of `default_used` grows
 * with the tokens used in the window (throughput × window): see bench/README.md.
 */
export const defaultGroupBlocked = (now: RawBuilder<unknown>) => sql`
    group_policy AS MATERIALIZED (
      SELECT d.concurrency, d.rate_limit, d.rate_window_ms FROM flow_default d
      WHERE d.kind = 'group' AND (d.concurrency IS NOT NULL OR d.rate_limit IS NOT NULL)
    ),
    group_default AS MATERIALIZED (SELECT g.concurrency FROM group_policy g WHERE g.concurrency IS NOT NULL),
    group_rate AS MATERIALIZED (
      SELECT g.rate_limit, ${now} - g.rate_window_ms * interval '1 millisecond' AS window_start FROM group_policy g WHERE g.rate_limit IS NOT NULL
    ),
    -- read through functions that take the partial indexes whatever the tables' statistics say
    -- (migration 0029): a plan made while they were empty scanned them whole
    default_held_full AS MATERIALIZED (
      SELECT coalesce((SELECT array_agg(f.name) FROM unnest(x.full_groups) f(name) WHERE ${undeclared(sql`f.name`)}), '{}') AS full_groups
      FROM (SELECT CASE WHEN EXISTS (SELECT 1 FROM group_default)
                        THEN jobclock_default_full((SELECT g.concurrency FROM group_default g))
                        ELSE '{}'::text[] END AS full_groups) x
    ),
    default_used AS MATERIALIZED (
      SELECT x.used,
             coalesce((SELECT array_agg(e.key) FROM jsonb_each(x.used) e
                       WHERE jsonb_array_length(e.value) >= (SELECT r.rate_limit FROM group_rate r) AND ${undeclared(sql`e.key`)}), '{}') AS full_groups
      FROM (SELECT CASE WHEN EXISTS (SELECT 1 FROM group_rate)
                        THEN jobclock_default_used((SELECT r.window_start FROM group_rate r), (SELECT r.rate_limit FROM group_rate r))
                        ELSE '{}'::jsonb END AS used) x
    ),
    default_full AS MATERIALIZED (SELECT h.full_groups || u.full_groups AS groups FROM default_held_full h, default_used u)`;

/** The tokens of a group used within the window (a JSON array, empty for none). */
const usedTokens = (group: RawBuilder<unknown>) => sql`coalesce((SELECT u.used -> ${group} FROM default_used u), '[]'::jsonb)`;

/**
 * A lane (`p`, ranked by `turn`) of an undeclared group gives no more candidates than the default
 * concurrency, nor than the tokens its group has left.
 */
export const WITHIN_DEFAULT_GROUP_SHARE = sql`(NOT EXISTS (SELECT 1 FROM group_policy) OR p.turn <= least(
      coalesce((SELECT g.concurrency FROM group_default g), 2147483647),
      coalesce((SELECT r.rate_limit FROM group_rate r) - jsonb_array_length(${usedTokens(sql`p.group_`)}), 2147483647))
    OR NOT ${undeclared(sql`p.group_`)})`;

/**
 * After `refused` (the declared limits' refusals): the candidates of undeclared groups take their
 * group's free tokens, then its free permits, the k-th candidate of a group the k-th one free in
 * this statement's snapshot; each upsert re-checks its row on the newest version (waiting for a
 * lease that holds it uncommitted), so a token or permit another lease took meanwhile is refused.
 * Jobs that this lease may drop instead (past startBy; periodic jobs with a drop check) take none:
 * only a job that runs takes one. `all_refused`: both kinds of refusal.
 */
export const defaultGroupGrants = (now: RawBuilder<unknown>) => sql`
    default_needs AS MATERIALIZED (
      SELECT c.id, c.group_, c.priority, c.run_at, row_number() OVER (PARTITION BY c.group_ ORDER BY c.priority DESC, c.run_at, c.id) AS rn
      FROM candidates c
      WHERE EXISTS (SELECT 1 FROM group_policy) AND c.id NOT IN (SELECT id FROM refused)
        AND (c.start_by <= ${now}) IS NOT TRUE AND NOT (c.periodic_task_id IS NOT NULL AND c.run_interval IS NOT NULL)
        AND ${undeclared(sql`c.group_`)}
    ),
    -- the permits held of the candidates' groups, read once: {group: [n, …]}
    default_held_of AS MATERIALIZED (
      SELECT CASE WHEN EXISTS (SELECT 1 FROM group_default)
                  THEN jobclock_default_held_of(ARRAY(SELECT DISTINCT n.group_ FROM default_needs n))
                  ELSE '{}'::jsonb END AS held
    ),
    -- under a default concurrency, in order: a candidate begins only if every queued job of its
    -- group that comes before it (runAt, creation; the lanes hold the highest priority with a
    -- runnable job) is a candidate of this lease too: one that another lease holds locked (SKIP
    -- LOCKED passed it over) keeps its turn. A range of job_fair_idx per candidate.
    default_heads AS MATERIALIZED (
      SELECT d.*,
             -- the group's permits free in this statement's snapshot, the first rn of them at most
             -- (among the held ones + rn: not the whole concurrency, which may be large); null: no
             -- default concurrency
             CASE WHEN EXISTS (SELECT 1 FROM group_default) THEN (
               SELECT coalesce(array_agg(x.n ORDER BY x.n), '{}')
               FROM (SELECT coalesce((SELECT h.held -> d.group_ FROM default_held_of h), '[]'::jsonb) AS ns) u,
                    generate_series(1, least((SELECT g.concurrency FROM group_default g), jsonb_array_length(u.ns) + d.rn::int)) x(n)
               WHERE NOT u.ns @> to_jsonb(x.n)) END AS ns,
             -- its tokens free: the first rn of them at most (among the used ones + rn); null: no default rate
             CASE WHEN EXISTS (SELECT 1 FROM group_rate) THEN (
               SELECT coalesce(array_agg(x.n ORDER BY x.n), '{}')
               FROM (SELECT ${usedTokens(sql`d.group_`)} AS ns) u,
                    generate_series(1, least((SELECT r.rate_limit FROM group_rate r), jsonb_array_length(u.ns) + d.rn::int)) x(n)
               WHERE NOT u.ns @> to_jsonb(x.n)) END AS ts
      FROM default_needs d
      WHERE NOT EXISTS (SELECT 1 FROM group_default)
         OR (SELECT count(*) FROM (
               SELECT 1 FROM job j
               WHERE j.state = 'queued' AND j.priority = d.priority AND hashtext(j.group_) = hashtext(d.group_) AND j.group_ = d.group_
                 AND (j.run_at, j.id) < (d.run_at, d.id)
               LIMIT d.rn) x) < d.rn
    ),
    default_tokens AS (
      INSERT INTO flow_token AS t (kind, name, n, used_at)
      SELECT 'default-group', d.group_, d.ts[d.rn], ${now}
      FROM default_heads d
      WHERE d.rn <= cardinality(d.ts) AND (d.ns IS NULL OR d.rn <= cardinality(d.ns))
      -- one order of row locks for every lease: two leases wait for each other, never in a cycle
      ORDER BY d.group_, d.ts[d.rn]
      ON CONFLICT (kind, name, n) DO UPDATE SET used_at = EXCLUDED.used_at
        WHERE t.used_at IS NULL OR t.used_at <= (SELECT r.window_start FROM group_rate r)
      RETURNING t.name, t.n
    ),
    default_token_holders AS MATERIALIZED (
      SELECT coalesce(array_agg(d.id), '{}') AS ids FROM default_heads d JOIN default_tokens t ON t.name = d.group_ AND t.n = d.ts[d.rn]
    ),
    default_grants AS (
      INSERT INTO flow_slot AS s (kind, name, n, job_id)
      SELECT 'default-group', d.group_, d.ns[d.rn], d.id
      FROM default_heads d
      WHERE d.rn <= cardinality(d.ns) AND (d.ts IS NULL OR d.id = ANY ((SELECT h.ids FROM default_token_holders h)::bigint[]))
      ORDER BY d.group_, d.ns[d.rn]
      ON CONFLICT (kind, name, n) DO UPDATE SET job_id = EXCLUDED.job_id WHERE s.job_id IS NULL
      RETURNING s.job_id AS id, s.released_at
    ),
    -- looked up by position (arrays), not joined: the generic plan's estimates made joins quadratic
    default_holders AS MATERIALIZED (
      SELECT coalesce(array_agg(g.id), '{}') AS ids, coalesce(array_agg(g.released_at), '{}') AS released FROM default_grants g
    ),
    -- a candidate of an undeclared group runs with its permit (which it took only with its token), or
    -- without a default concurrency with its token
    all_refused AS MATERIALIZED (
      SELECT id FROM refused
      UNION
      SELECT d.id FROM default_needs d
      WHERE NOT d.id = ANY ((SELECT CASE WHEN EXISTS (SELECT 1 FROM group_default) THEN h.ids ELSE t.ids END
                             FROM default_holders h, default_token_holders t)::bigint[])
    )`;
