/**
 * The lease's part for groups nobody declared (GET|PATCH /groups-default, migrations 0024, 0027,
 * 0036). With a default concurrency n set, a job of a group without a flow_policy row of its own
 * begins only while fewer than n of its group's jobs run under the default: the lease marks the jobs
 * it begins so (job.group_default) and counts them (job_default_running_idx). No permit row: two
 * leases that both see a place free are kept from both taking it by a lock per group, taken without
 * waiting, and a count of the running jobs in a snapshot taken after it (defaultStarts; a group
 * whose lock another lease holds is left to that lease, and this one claims again).
 * With a default rate set, such a job also takes a token of its group — a flow_token row of kind
 * 'default-group', made by the lease that first needs it and taken by an upsert that re-checks,
 * on the newest version of the row, that it was last used a whole window ago. A job takes its place
 * first (no write), then its token: a token is never spent on a job that does not run.
 * Without a default, every part reads the empty flow_default and touches nothing else.
 */
import { type RawBuilder, sql } from 'kysely';

const undeclared = (group: RawBuilder<unknown>) =>
  sql`NOT EXISTS (SELECT 1 FROM flow_policy fp WHERE fp.kind = 'group' AND fp.name = ${group})`;

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
export const defaultGroupBlocked = (now: RawBuilder<unknown>) => sql`
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
                       WHERE jsonb_array_length(e.value) >= (SELECT r.rate_limit FROM group_rate r) AND ${undeclared(sql`e.key`)}), '{}') AS full_groups
      FROM (SELECT CASE WHEN EXISTS (SELECT 1 FROM group_rate)
                        THEN jobclock_default_used((SELECT r.window_start FROM group_rate r), (SELECT r.rate_limit FROM group_rate r))
                        ELSE '{}'::jsonb END AS used) x
    ),
    default_full AS MATERIALIZED (SELECT u.full_groups AS groups FROM default_used u)`;

/**
 * The class of the transaction-level advisory locks (two-key form, keyed by hashtext(group)) a
 * lease takes on the groups it begins jobs of under the default concurrency (defaultStarts); those
 * of jobclock_default_admit (migration 0036, which instances of the previous release call) are the same.
 */
const DEFAULT_GROUP_LOCK = sql.lit(1245923140);

/** The groups default's concurrency for jobclock_lanes (null: none), after defaultGroupBlocked. */
export const DEFAULT_CONCURRENCY = sql`(SELECT g.concurrency FROM group_default g)`;

/**
 * Whether candidate `d` (priority, group_, run_at, id, and rn: its rank within its group in this
 * claim) is in order: every queued job of its group that comes before it (runAt, creation; the
 * lanes hold the highest priority with a runnable job) is a candidate of this lease too — one that
 * another lease holds locked (SKIP LOCKED passed it over) keeps its turn. A range of job_fair_idx.
 */
export const IN_GROUP_ORDER = sql`(SELECT count(*) FROM (
               SELECT 1 FROM job j
               WHERE j.state = 'queued' AND j.priority = d.priority AND hashtext(j.group_) = hashtext(d.group_) AND j.group_ = d.group_
                 AND (j.run_at, j.id) < (d.run_at, d.id)
               LIMIT d.rn) x) < d.rn`;

/**
 * The admission under the default concurrency `n`, as one row `at`: for each row `d` of `rows`
 * (group_, rn, and k: 1, 2, … its place in the array) that `where` keeps, when it starts — `now`,
 * or later when its group's last job begun under the default ended later by the clock that
 * recorded it — or null where it may not begin. A row for which `may` holds takes its group's lock
 * without waiting (a group another lease holds is left to that lease); then
 * jobclock_default_starts (migration 0037) counts the locked groups' running jobs in a snapshot
 * taken after the locks, which sees every lease that held one committed.
 */
export const defaultStarts = (c: {
  rows: RawBuilder<unknown>;
  where: RawBuilder<unknown>;
  may: RawBuilder<unknown>;
  n: RawBuilder<unknown>;
  now: RawBuilder<unknown>;
}) => sql`
      SELECT jobclock_default_starts(l.groups, l.ranks, l.locked, ${c.n}, ${c.now}) AS at
      FROM (
        SELECT array_agg(d.group_ ORDER BY d.k) AS groups, array_agg(d.rn::int ORDER BY d.k) AS ranks,
               array_agg(CASE WHEN ${c.may} THEN pg_try_advisory_xact_lock(${DEFAULT_GROUP_LOCK}, hashtext(d.group_)) ELSE false END
                         ORDER BY d.k) AS locked
        FROM ${c.rows}
        WHERE ${c.where}
        HAVING count(*) > 0
      ) l`;

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
 * After `refused` (the declared limits' refusals): the candidates of undeclared groups that may
 * begin. `default_needs`: those of undeclared groups that would run (jobs this lease may drop
 * instead — past startBy; periodic jobs with a drop check — take neither a place nor a token: only
 * a job that runs counts); `default_heads`: under a default concurrency, those in order within
 * their group (IN_GROUP_ORDER); `default_admitted`: when each head starts, or null (defaultStarts,
 * as the slim claim decides it); `default_places`: the heads that begin. They take their group's
 * free tokens under a default rate, the k-th candidate of a group the k-th one free in this
 * statement's snapshot; each upsert re-checks its row on the newest version (waiting for a lease
 * that holds it uncommitted), so a token another lease took meanwhile is refused.
 * `default_holders`: the jobs that begin under the default concurrency (arrays of ids and of their
 * starts, looked up by position: the generic plan's estimates made joins quadratic);
 * `all_refused`: both kinds of refusal.
 */
export const defaultGroupGrants = (now: RawBuilder<unknown>) => sql`
    default_needs AS MATERIALIZED (
      SELECT c.id, c.group_, c.priority, c.run_at, row_number() OVER (PARTITION BY hashtext(c.group_), c.group_ ORDER BY c.priority DESC, c.run_at, c.id) AS rn
      FROM candidates c
      WHERE EXISTS (SELECT 1 FROM group_policy) AND c.id NOT IN (SELECT id FROM refused)
        AND (c.start_by <= ${now}) IS NOT TRUE AND NOT (c.periodic_task_id IS NOT NULL AND c.run_interval IS NOT NULL)
        AND ${undeclared(sql`c.group_`)}
    ),
    default_heads AS MATERIALIZED (
      SELECT d.*, row_number() OVER (ORDER BY d.id) AS k,
             -- its group's tokens free: the first rn of them at most (among the used ones + rn); null: no default rate
             CASE WHEN EXISTS (SELECT 1 FROM group_rate) THEN (
               SELECT coalesce(array_agg(x.n ORDER BY x.n), '{}')
               FROM (SELECT ${usedTokens(sql`d.group_`)} AS ns) u,
                    generate_series(1, least((SELECT r.rate_limit FROM group_rate r), jsonb_array_length(u.ns) + d.rn::int)) x(n)
               WHERE NOT u.ns @> to_jsonb(x.n)) END AS ts
      FROM default_needs d
      WHERE NOT EXISTS (SELECT 1 FROM group_default) OR ${IN_GROUP_ORDER}
    ),
    default_admitted AS MATERIALIZED (${defaultStarts({
      rows: sql`default_heads d`,
      where: sql`EXISTS (SELECT 1 FROM group_default)`,
      may: sql`d.rn <= ${DEFAULT_CONCURRENCY}`,
      n: DEFAULT_CONCURRENCY,
      now,
    })}
    ),
    default_places AS MATERIALIZED (
      SELECT d.id, d.group_, d.rn, d.ts, (SELECT a.at[d.k] FROM default_admitted a) AS start_at
      FROM default_heads d
      WHERE NOT EXISTS (SELECT 1 FROM group_default) OR (SELECT a.at[d.k] FROM default_admitted a) IS NOT NULL
    ),
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
      SELECT coalesce(array_agg(d.id), '{}') AS ids, coalesce(array_agg(d.start_at), '{}') AS starts
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
