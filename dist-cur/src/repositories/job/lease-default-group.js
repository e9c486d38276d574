/**
 * The lease's part for groups nobody declared (GET|PATCH /groups-default, migrations 0024, 0027,
 * 0036). With a default concurrency n set, a job of a group without a flow_policy row of its own
 * begins only while fewer than n of its group's jobs run under the default: the lease marks the jobs
 * it begins so (job.group_default) and counts them (job_default_running_idx). No permit row: two
 * leases that both see a place free are kept from both taking it by jobclock_default_admit, which
 * takes a lock per group without waiting and counts the running jobs in a snapshot taken after it
 * (a group whose lock another lease holds is left to that lease, and this one claims again).
 * With a default rate set, such a job also takes a token of its group — a flow_token row of kind
 * 'default-group', made by the lease that first needs it and taken by an upsert that re-checks,
 * on the newest version of the row, that it was last used a whole window ago. A job takes its place
 * first (no write), then its token: a token is never spent on a job that does not run.
 * Without a default, every part reads the empty flow_default and touches nothing else.
 */
import { sql } from 'kysely';
const undeclared = (group) => sql `NOT EXISTS (SELECT 1 FROM flow_policy fp WHERE fp.kind = 'group' AND fp.name = ${group})`;
/**
 * `group_policy`: the default (no row: none), read once; `group_default`: its concurrency,
 * `group_rate`: its rate (the lanes leave out the groups with every place taken themselves:
 * jobclock_lanes' p_default_n, migration 0036). `default_used`: the tokens used within the window,
 * read once (jobclock_default_used: a range of the partial index by used_at), as `used`
 * {group: [n, …]}; `default_full`: the groups with every token used, left out of the lanes (unless
 * they declared a policy of their own since). Nothing else reads flow_token by group: a plan made
 * while the table was empty (prepared statements keep theirs) would scan it whole once per
 * candidate. The cost of `default_used` grows with the tokens used in the window (throughput ×
 * window): see bench/README.md.
 */
export const defaultGroupBlocked = (now) => sql `
    group_policy AS MATERIALIZED (
      SELECT d.concurrency, d.rate_limit, d.rate_window_ms FROM flow_default d
      WHERE d.kind = 'group' AND (d.concurrency IS NOT NULL OR d.rate_limit IS NOT NULL)
    ),
    group_default AS MATERIALIZED (SELECT g.concurrency FROM group_policy g WHERE g.concurrency IS NOT NULL),
    group_rate AS MATERIALIZED (
      SELECT g.rate_limit, ${now} - g.rate_window_ms * interval '1 millisecond' AS window_start FROM group_policy g WHERE g.rate_limit IS NOT NULL
    ),
    -- read through a function that takes the partial index whatever the table's statistics say
    -- (migration 0029): a plan made while it was empty scanned it whole
    default_used AS MATERIALIZED (
      SELECT x.used,
             coalesce((SELECT array_agg(e.key) FROM jsonb_each(x.used) e
                       WHERE jsonb_array_length(e.value) >= (SELECT r.rate_limit FROM group_rate r) AND ${undeclared(sql `e.key`)}), '{}') AS full_groups
      FROM (SELECT CASE WHEN EXISTS (SELECT 1 FROM group_rate)
                        THEN jobclock_default_used((SELECT r.window_start FROM group_rate r), (SELECT r.rate_limit FROM group_rate r))
                        ELSE '{}'::jsonb END AS used) x
    ),
    default_full AS MATERIALIZED (SELECT u.full_groups AS groups FROM default_used u)`;
/** The groups default's concurrency for jobclock_lanes (null: none), after defaultGroupBlocked. */
export const DEFAULT_CONCURRENCY = sql `(SELECT g.concurrency FROM group_default g)`;
/** The tokens of a group used within the window (a JSON array, empty for none). */
const usedTokens = (group) => sql `coalesce((SELECT u.used -> ${group} FROM default_used u), '[]'::jsonb)`;
/**
 * A lane (`p`, ranked by `turn`) of an undeclared group gives no more candidates than the default
 * concurrency, nor than the tokens its group has left.
 */
export const WITHIN_DEFAULT_GROUP_SHARE = sql `(NOT EXISTS (SELECT 1 FROM group_policy) OR p.turn <= least(
      coalesce((SELECT g.concurrency FROM group_default g), 2147483647),
      coalesce((SELECT r.rate_limit FROM group_rate r) - jsonb_array_length(${usedTokens(sql `p.group_`)}), 2147483647))
    OR NOT ${undeclared(sql `p.group_`)})`;
/**
 * After `refused` (the declared limits' refusals): the candidates of undeclared groups that may
 * begin. `default_heads`: under a default concurrency, those in order within their group;
 * `default_admitted`: how many more of each of their groups may begin, counted under the group's
 * lock (jobclock_default_admit), and when the group's last job ended; `default_places`: the heads
 * within that many. They take their group's free tokens under a default rate, the k-th candidate
 * of a group the k-th one free in this statement's snapshot; each upsert re-checks its row on the
 * newest version (waiting for a lease that holds it uncommitted), so a token another lease took
 * meanwhile is refused. Jobs that this lease may drop instead (past startBy; periodic jobs with a
 * drop check) take neither: only a job that runs counts. `default_holders`: the jobs that begin
 * under the default concurrency (arrays of ids and of their groups' last ends, looked up by
 * position: the generic plan's estimates made joins quadratic); `all_refused`: both kinds of refusal.
 */
export const defaultGroupGrants = (now) => sql `
    ${defaultGroupPlaces(now)},
    default_tokens AS (
      INSERT INTO flow_token AS t (kind, name, n, used_at)
      SELECT 'default-group', d.group_, d.ts[d.rn], ${now}
      FROM default_places d
      WHERE d.rn <= cardinality(d.ts)
      -- one order of row locks for every lease: two leases wait for each other, never in a cycle
      ORDER BY d.group_, d.ts[d.rn]
      ON CONFLICT (kind, name, n) DO UPDATE SET used_at = EXCLUDED.used_at
        WHERE t.used_at IS NULL OR t.used_at <= (SELECT r.window_start FROM group_rate r)
      RETURNING t.name, t.n
    ),
    default_token_holders AS MATERIALIZED (
      SELECT coalesce(array_agg(d.id), '{}') AS ids FROM default_places d JOIN default_tokens t ON t.name = d.group_ AND t.n = d.ts[d.rn]
    ),
    default_holders AS MATERIALIZED (
      SELECT coalesce(array_agg(d.id), '{}') AS ids, coalesce(array_agg(d.last_end), '{}') AS released
      FROM default_places d
      WHERE EXISTS (SELECT 1 FROM group_default)
        AND (NOT EXISTS (SELECT 1 FROM group_rate) OR d.id = ANY ((SELECT h.ids FROM default_token_holders h)::bigint[]))
    ),
    -- a candidate of an undeclared group runs in its place (which it took with its token, under a
    -- rate), or without a default concurrency with its token
    all_refused AS MATERIALIZED (
      SELECT id FROM refused
      UNION
      SELECT d.id FROM default_needs d
      WHERE NOT d.id = ANY ((SELECT CASE WHEN EXISTS (SELECT 1 FROM group_default) THEN h.ids ELSE t.ids END
                             FROM default_holders h, default_token_holders t)::bigint[])
    )`;
/**
 * `default_needs`, `default_heads`, `default_admitted` and `default_places` (see defaultGroupGrants),
 * after `candidates` and `refused`; shared with the slim claim, which serves a default concurrency
 * without a rate (its `ts` are then null).
 */
export const defaultGroupPlaces = (now) => sql `
    default_needs AS MATERIALIZED (
      SELECT c.id, c.group_, c.priority, c.run_at, row_number() OVER (PARTITION BY hashtext(c.group_), c.group_ ORDER BY c.priority DESC, c.run_at, c.id) AS rn
      FROM candidates c
      WHERE EXISTS (SELECT 1 FROM group_policy) AND c.id NOT IN (SELECT id FROM refused)
        AND (c.start_by <= ${now}) IS NOT TRUE AND NOT (c.periodic_task_id IS NOT NULL AND c.run_interval IS NOT NULL)
        AND ${undeclared(sql `c.group_`)}
    ),
    -- under a default concurrency, in order: a candidate begins only if every queued job of its
    -- group that comes before it (runAt, creation; the lanes hold the highest priority with a
    -- runnable job) is a candidate of this lease too: one that another lease holds locked (SKIP
    -- LOCKED passed it over) keeps its turn. A range of job_fair_idx per candidate.
    default_heads AS MATERIALIZED (
      SELECT d.*,
             -- its group's tokens free: the first rn of them at most (among the used ones + rn); null: no default rate
             CASE WHEN EXISTS (SELECT 1 FROM group_rate) THEN (
               SELECT coalesce(array_agg(x.n ORDER BY x.n), '{}')
               FROM (SELECT ${usedTokens(sql `d.group_`)} AS ns) u,
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
    -- the places free of the heads' groups, counted under each group's lock (a statement's
    -- snapshot may predate another lease's commit): arrays by group
    default_admitted AS MATERIALIZED (
      SELECT coalesce(array_agg(a.name), '{}') AS names, coalesce(array_agg(a.free), '{}') AS free,
             coalesce(array_agg(a.last_end), '{}') AS last_end
      FROM group_default g
      CROSS JOIN LATERAL jobclock_default_admit(ARRAY(SELECT DISTINCT h.group_ FROM default_heads h), g.concurrency) a
      WHERE EXISTS (SELECT 1 FROM default_heads)
    ),
    default_places AS MATERIALIZED (
      SELECT d.id, d.group_, d.rn, d.ts, (SELECT a.last_end[k.i] FROM default_admitted a) AS last_end
      FROM default_heads d
      LEFT JOIN LATERAL (SELECT array_position(a.names, d.group_) AS i FROM default_admitted a) k ON true
      WHERE NOT EXISTS (SELECT 1 FROM group_default) OR d.rn <= (SELECT a.free[k.i] FROM default_admitted a)
    )`;
//# sourceMappingURL=lease-default-group.js.map