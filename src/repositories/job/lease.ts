import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { PreparedExecutor } from '../../db/executor.js';
import { compiledOnce } from './compile.js';
import { laneCtes, laneWant, leasedJobSet, moreCte, nextLaneStart } from './lease-lanes.js';
import { JOB_COLUMNS, jobCols, type JobRow, type LeasedInSlot, leasedFromRow } from './row.js';
import { DEFAULT_CONCURRENCY, defaultGroupBlocked, defaultGroupGrants, WITHIN_DEFAULT_GROUP_SHARE } from './lease-default-group.js';
import { jobLeaseSlim, type SlimLeaseResult } from './lease-slim.js';
import { iso, ms } from './sql.js';

/** One place in a claim: a job for this worker, leased for this long. */
export interface LeaseSlot {
  worker: string;
  /** null: the job type's default lease, else DEFAULT_LEASE_MS. */
  leaseMs: number | null;
}

export interface LeaseParams {
  now: Date;
  types?: readonly string[] | undefined;
  groups?: readonly string[] | undefined;
  /** One per job wanted; claimed jobs fill them in order. */
  slots: readonly LeaseSlot[];
  /** Where on the ring of group hashes the lanes' walk starts (int4); default: this process's next (nextLaneStart). */
  laneStart?: number | undefined;
}

export interface DroppedJob {
  id: string;
  taskId: string | null;
  error: unknown;
}

export type { LeasedInSlot };

export interface LeaseResult {
  /** Candidates a type or group limit refused a permit (another lease took it first): they stay queued. */
  refused?: number;
  /** Lanes may hold more runnable jobs than this claim took (it left slots empty): claim again for them. */
  more?: boolean;
  /**
   * A lane gave no job although it held a runnable one in this claim's snapshot: another claim took
   * or locked it meanwhile (two claims whose walks over the groups met the same lanes). Claim again,
   * even with nothing taken: the other claim has moved on, and a new walk starts elsewhere.
   */
  contended?: boolean;
  /** In claim order (by turn between groups, then run_at, id within a group), which is also slot order. */
  leased: LeasedInSlot[];
  dropped: DroppedJob[];
}

/**
 * Whether a claim that left slots empty should be made again for them: the periodic drop check, a
 * type or group limit (a permit another lease took first) and the share of each group (fairness:
 * `more`) leave slots empty while jobs may remain — unless the claim found nothing at all. A claim
 * that met another one on its lanes (`contended`) is made again, also when it took nothing, in
 * its first CONTENDED_EMPTY_ROUNDS rounds (`round`: how many claims came before it).
 */
export function claimAgain(r: LeaseResult, round = 0): boolean {
  const progressed = r.leased.length > 0 || r.dropped.length > 0 || (r.refused ?? 0) > 0;
  if (r.contended === true && (progressed || round < CONTENDED_EMPTY_ROUNDS)) return true;
  return progressed && (r.dropped.length > 0 || (r.refused ?? 0) > 0 || r.more === true);
}

/**
 * Claims in a row (from the first, round 0) after which one that took nothing because of contention
 * is not repeated: rows another transaction holds for long (a bulk action, a user's lock) must not
 * make every claim spin.
 */
export const CONTENDED_EMPTY_ROUNDS = 3;

/**
 * Claims up to `slots.length` runnable jobs in ONE statement: queued, run_at <= now, matching the
 * type and group filters, in order priority desc, run_at, id, with FOR UPDATE SKIP LOCKED so that
 * concurrent claims never take one job twice. The k-th job that runs fills the k-th slot: its
 * worker and lease length. Each gets a fresh lease token (a fencing token), attempts + 1,
 * started_at = now, lease_expires_at = now + lease, deadline = now + timebox.
 *
 * Leasing is the moment execution begins, so for jobs of periodic tasks the same statement
 *  - locks the tasks' rows (FOR NO KEY UPDATE, in id order: concurrent claims of two jobs of one task
 *    serialise on it, and the second sees the first's last_run);
 *  - drops a job carrying run_interval (policy allow) that would begin before
 *    last_run + run_interval − run_tolerance, or that is not the first of its task in this claim;
 *  - sets the task's last_run = now for every job that runs, and returns the task's state as taskState.
 * A job whose start_by has come (startBy) is dropped instead of leased (reason expired).
 * Without jobs of periodic tasks among the candidates, those parts touch no rows. Dropped jobs are
 * returned apart; the caller claims again for the slots they left empty.
 *
 * The common case — no flow control configured, no periodic task's job and no startBy among the
 * candidates — is served by a slim statement that checks those conditions itself and stands
 * aside when one fails (lease-slim.ts); then the full statement (jobLeaseFull) runs.
 */
export async function jobLease(db: PreparedExecutor, p: LeaseParams): Promise<LeaseResult> {
  if (p.slots.length === 0) return { leased: [], dropped: [] };
  if (leasesToGo > 0) leasesToGo--;
  else first = 'slim';
  if (first === 'slim') {
    const slim = await jobLeaseSlim(db, p);
    if (slim !== null && slim !== 'groups-default') return fromSlim(slim);
    firstFor(slim === null ? 'full' : 'slim+default');
    if (slim === null) return jobLeaseFull(db, p);
  }
  if (first === 'slim+default') {
    const slim = await jobLeaseSlim(db, p, true);
    if (slim !== null && slim !== 'groups-default') return fromSlim(slim);
    firstFor('full');
  }
  return jobLeaseFull(db, p);
}

const fromSlim = (slim: SlimLeaseResult): LeaseResult => ({
  leased: slim.leased,
  dropped: [],
  refused: slim.refused,
  more: slim.more,
  contended: slim.contended,
});

/**
 * After the plain slim claim stood aside (flow control configured, or a periodic task's job or one
 * with a startBy among its candidates), the next leases of this process go straight to the
 * statement that served instead — the slim claim with the groups default where only that is set,
 * else the full statement: where that happened once it tends to go on, and each claim that stands
 * aside is a wasted statement. Then the plain claim is tried again. Every statement answers
 * correctly at any time; this only decides which is tried first.
 */
const LEASES_AFTER_FALLBACK = 20;
let leasesToGo = 0;
let first: 'slim' | 'slim+default' | 'full' = 'slim';
const firstFor = (statement: 'slim+default' | 'full') => {
  first = statement;
  leasesToGo = LEASES_AFTER_FALLBACK;
};

/** The full lease statement, whatever the candidates (what jobLease does when the slim claim stands aside). */
export async function jobLeaseFull(db: PreparedExecutor, p: LeaseParams): Promise<LeaseResult> {
  if (p.slots.length === 0) return { leased: [], dropped: [] };
  const byType = p.types !== undefined && p.types.length > 0;
  const byGroup = p.groups !== undefined && p.groups.length > 0;
  const values = {
    now: p.now,
    limit: p.slots.length,
    // each slot's lease token, made here (see lease-slim.ts)
    slots: JSON.stringify(p.slots.map((s, i) => ({ n: i + 1, worker: s.worker, lease: s.leaseMs, token: randomUUID() }))),
    types: byType ? [...new Set(p.types)] : null,
    groups: byGroup ? [...new Set(p.groups)] : null,
    want: laneWant(p.slots.length),
    start: p.laneStart ?? nextLaneStart(),
  };
  type Row = JobRow & {
    task_state: unknown;
    dropped: boolean;
    slot: number | null;
    refused: number | null;
    more: boolean | null;
    contended: boolean | null;
  };
  const rows = await compiledOnce(db, `lease${byType ? '+type' : ''}${byGroup ? '+group' : ''}`, values, (v) => {
    const now = sql`${v.now}::timestamptz`;
    // Flow control: jobs of a paused type or group, or of one whose limit has no permit free (as of
    // this statement's snapshot, blocked_keys below), are not candidates: blocked groups are no
    // lanes, blocked types are no sources (or are filtered in their lanes). Fairness between groups:
    // lease-lanes.ts, shared with the slim claim.
    const columns = sql`id, type, group_, periodic_task_id, run_interval, run_tolerance, priority, run_at, start_by`;
    const laneTypes = byType
      ? sql`ARRAY(SELECT DISTINCT t FROM unnest(${v.types}::text[]) AS t WHERE NOT t = ANY((SELECT b.types FROM blocked_keys b)::text[]))`
      : sql`NULL::text[]`;
    const claim = { byType, now, laneTypes, groups: v.groups, want: v.want, start: v.start, limit: v.limit };
    const pushTypes = byType ? sql`` : sql`|| ARRAY(SELECT pt.type FROM push_type pt)`;
    const contendedTypes = byType ? sql`true` : sql`cardinality((SELECT b.types FROM blocked_keys b)) = 0`;
    const windowStart = (alias: string) => sql`${now} - ${ms(sql`${sql.ref(`${alias}.rate_window_ms`)}`)}`;
    return sql<Row>`
    WITH slots AS MATERIALIZED (
      SELECT * FROM jsonb_to_recordset(${v.slots}::jsonb) AS s(n int, worker text, lease bigint, token uuid)
    ),
    policies AS MATERIALIZED (
      SELECT kind, name, paused, concurrency, rate_limit, rate_window_ms FROM flow_policy
      WHERE paused OR concurrency IS NOT NULL OR rate_limit IS NOT NULL
    ),
    blocked_keys AS MATERIALIZED (
      -- a lease that names no types takes no job of a push type either: those go to the type's
      -- endpoint (migration 0025), leased by name by the push sender
      SELECT coalesce(array_agg(p.name) FILTER (WHERE p.kind = 'type'), '{}') ${pushTypes} AS types,
             coalesce(array_agg(p.name) FILTER (WHERE p.kind = 'group'), '{}') AS groups
      FROM policies p
      WHERE p.paused
         OR (p.concurrency IS NOT NULL AND NOT EXISTS (
               SELECT 1 FROM flow_slot s WHERE s.kind = p.kind AND s.name = p.name AND s.n <= p.concurrency AND s.job_id IS NULL))
         OR (p.rate_limit IS NOT NULL AND NOT EXISTS (
               SELECT 1 FROM flow_token t WHERE t.kind = p.kind AND t.name = p.name AND t.n <= p.rate_limit
                 AND (t.used_at IS NULL OR t.used_at <= ${windowStart('p')})))
    ),
    ${defaultGroupBlocked(now)},
    ${laneCtes({
      ...claim,
      blockedGroups: sql`(SELECT b.groups FROM blocked_keys b) || (SELECT f.groups FROM default_full f)`,
      defaultConcurrency: DEFAULT_CONCURRENCY,
      columns,
      untypedJobsAlso: sql`NOT j.type = ANY((SELECT b.types FROM blocked_keys b)::text[])`,
    })},
    ranked_picks AS MATERIALIZED (
      SELECT p.*, row_number() OVER (PARTITION BY p.lane_type, p.group_ ORDER BY p.run_at, p.id) AS turn FROM picked p
    ),
    candidates AS MATERIALIZED (
      SELECT ${columns} FROM ranked_picks p WHERE ${WITHIN_DEFAULT_GROUP_SHARE} ORDER BY turn, r LIMIT ${v.limit}
    ),
    -- whether lanes may hold more, and whether another claim took a lane's job (the lane walk does
    -- not leave out blocked types: an untyped claim that does cannot tell)
    ${moreCte({ ...claim, contendedIf: contendedTypes })},
    -- candidates under a limit: one row per limit that applies (type and group), ranked within it
    needs AS MATERIALIZED (
      SELECT c.id, p.kind, p.name, p.concurrency IS NOT NULL AS slot, p.rate_limit IS NOT NULL AS token,
             row_number() OVER (PARTITION BY p.kind, p.name ORDER BY c.priority DESC, c.run_at, c.id) AS rn
      FROM candidates c
      JOIN policies p ON (p.kind = 'type' AND p.name = c.type) OR (p.kind = 'group' AND p.name = c.group_)
      WHERE p.concurrency IS NOT NULL OR p.rate_limit IS NOT NULL
    ),
    -- free permits, locked: a permit another lease took after this statement's snapshot is
    -- re-checked on its newest version and skipped
    -- free permits, as many per key as its candidates need, locked: a permit another lease took
    -- after this statement's snapshot is re-checked on its newest version and skipped
    wanted AS MATERIALIZED (
      SELECT n.kind, n.name, bool_or(n.slot) AS slot, bool_or(n.token) AS token, count(*) AS k FROM needs n GROUP BY n.kind, n.name
    ),
    free_slots AS MATERIALIZED (
      SELECT w.kind, w.name, f.n, f.released_at, row_number() OVER (PARTITION BY w.kind, w.name ORDER BY f.n) AS pn
      FROM wanted w JOIN policies p ON p.kind = w.kind AND p.name = w.name
      CROSS JOIN LATERAL (
        SELECT s.n, s.released_at FROM flow_slot s
        WHERE s.kind = w.kind AND s.name = w.name AND s.job_id IS NULL AND s.n <= p.concurrency
        ORDER BY s.n
        LIMIT w.k
        FOR UPDATE OF s SKIP LOCKED
      ) f
      WHERE w.slot
    ),
    free_tokens AS MATERIALIZED (
      SELECT w.kind, w.name, f.n, row_number() OVER (PARTITION BY w.kind, w.name ORDER BY f.used_at NULLS FIRST, f.n) AS pn
      FROM wanted w JOIN policies p ON p.kind = w.kind AND p.name = w.name
      CROSS JOIN LATERAL (
        SELECT t.n, t.used_at FROM flow_token t
        WHERE t.kind = w.kind AND t.name = w.name AND t.n <= p.rate_limit AND (t.used_at IS NULL OR t.used_at <= ${windowStart('p')})
        ORDER BY t.used_at NULLS FIRST, t.n
        LIMIT w.k
        FOR UPDATE OF t SKIP LOCKED
      ) f
      WHERE w.token
    ),
    -- the k-th candidate of a key gets the key's k-th free permit: looked up in an array per key
    -- (a join on the rank was quadratic under the generic plan's estimate of one row per side)
    slot_arrays AS MATERIALIZED (
      SELECT kind, name, array_agg(n ORDER BY pn) AS ns, array_agg(released_at ORDER BY pn) AS released FROM free_slots GROUP BY kind, name
    ),
    token_arrays AS MATERIALIZED (
      SELECT kind, name, array_agg(n ORDER BY pn) AS ns FROM free_tokens GROUP BY kind, name
    ),
    slot_grants AS MATERIALIZED (
      SELECT n.id, n.kind, n.name, a.ns[n.rn] AS n, a.released[n.rn] AS released_at
      FROM needs n JOIN slot_arrays a ON a.kind = n.kind AND a.name = n.name
      WHERE n.slot AND n.rn <= cardinality(a.ns)
    ),
    token_grants AS MATERIALIZED (
      SELECT n.id, n.kind, n.name, a.ns[n.rn] AS n
      FROM needs n JOIN token_arrays a ON a.kind = n.kind AND a.name = n.name
      WHERE n.token AND n.rn <= cardinality(a.ns)
    ),
    -- a candidate runs only with every permit its limits ask for; a refused one stays queued
    refused AS MATERIALIZED (
      SELECT DISTINCT n.id FROM needs n
      WHERE (n.slot AND NOT EXISTS (SELECT 1 FROM slot_grants g WHERE g.id = n.id AND g.kind = n.kind AND g.name = n.name))
         OR (n.token AND NOT EXISTS (SELECT 1 FROM token_grants g WHERE g.id = n.id AND g.kind = n.kind AND g.name = n.name))
    ),
    ${defaultGroupGrants(now)},
    tasks AS MATERIALIZED (
      SELECT t.id, t.last_run, t.state
      FROM periodic_task t
      WHERE t.id IN (SELECT c.periodic_task_id FROM candidates c WHERE c.periodic_task_id IS NOT NULL)
      ORDER BY t.id
      FOR NO KEY UPDATE OF t
    ),
    ranked AS MATERIALIZED (
      SELECT c.id, c.periodic_task_id, c.run_interval, coalesce(c.run_tolerance, 0) AS run_tolerance,
             c.priority, c.run_at, c.start_by, t.id IS NOT NULL AS has_task, t.last_run, t.state AS task_state,
             row_number() OVER (PARTITION BY c.periodic_task_id ORDER BY c.priority DESC, c.run_at, c.id) AS nth
      FROM candidates c LEFT JOIN tasks t ON t.id = c.periodic_task_id
      WHERE c.id NOT IN (SELECT id FROM all_refused)
    ),
    -- freshness: a job past its startBy is never handed out (dropped, reason expired), beside the
    -- periodic drop check
    decided AS MATERIALIZED (
      SELECT r.*, (r.start_by <= ${now}) IS TRUE AS expired,
             (r.start_by <= ${now}) IS TRUE OR (r.has_task AND r.run_interval IS NOT NULL AND (
               r.nth > 1 OR (r.last_run IS NOT NULL AND ${now} < r.last_run + ${ms(sql`r.run_interval - r.run_tolerance`)})
             )) AS to_drop
      FROM ranked r
    ),
    -- per job that got slots: when the last job that held one of them stopped (arrays, looked up
    -- by position: not a subquery per job over the grants)
    slot_holders AS MATERIALIZED (
      SELECT coalesce(array_agg(h.id), '{}') AS ids, coalesce(array_agg(h.released_at), '{}') AS released
      FROM (SELECT g.id, max(g.released_at) AS released_at FROM slot_grants g GROUP BY g.id) h
    ),
    assigned AS MATERIALIZED (
      SELECT d.*, count(*) FILTER (WHERE NOT d.to_drop) OVER (ORDER BY d.priority DESC, d.run_at, d.id ROWS UNBOUNDED PRECEDING) AS slot,
             h.k IS NOT NULL OR dh.k IS NOT NULL AS holds_slot, dh.k IS NOT NULL AS in_default,
             -- not before the job that held its slot stopped (see flow_slot.released_at)
             greatest(${now}, (SELECT x.released[h.k] FROM slot_holders x), (SELECT x.starts[dh.k] FROM default_holders x)) AS start_at
      FROM decided d
      LEFT JOIN LATERAL (SELECT array_position(x.ids, d.id) AS k FROM slot_holders x) h ON h.k IS NOT NULL
      LEFT JOIN LATERAL (SELECT array_position(x.ids, d.id) AS k FROM default_holders x) dh ON dh.k IS NOT NULL
    ),
    leased AS (
      UPDATE job j SET ${leasedJobSet({
        now,
        start: sql`d.start_at`,
        worker: sql`s.worker`,
        token: sql`s.token`,
        holdsSlot: sql`d.holds_slot`,
        groupDefault: sql`d.in_default`,
      })}
      FROM assigned d JOIN slots s ON s.n = d.slot
      -- a primary-key probe per job: the candidates come from lanes whose estimate is small (an
      -- "id = ANY(list)" guard here, once needed, became a probe of the whole list per job)
      WHERE j.id = d.id AND NOT d.to_drop
      RETURNING ${jobCols('j')}, d.task_state, d.slot
    ),
    took_slots AS (
      UPDATE flow_slot s SET job_id = g.id
      FROM slot_grants g
      WHERE s.kind = g.kind AND s.name = g.name AND s.n = g.n AND g.id = ANY (ARRAY(SELECT a.id FROM assigned a WHERE NOT a.to_drop))
    ),
    took_tokens AS (
      UPDATE flow_token t SET used_at = ${now}
      FROM token_grants g
      WHERE t.kind = g.kind AND t.name = g.name AND t.n = g.n AND g.id = ANY (ARRAY(SELECT a.id FROM assigned a WHERE NOT a.to_drop))
    ),
    dropped AS (
      UPDATE job j SET
        state = 'dropped',
        finished_at = ${now},
        lease_token = NULL,
        updated_at = ${now},
        error = CASE WHEN d.expired THEN jsonb_build_object(
          'kind', 'dropped', 'reason', 'expired',
          'message', 'not leased by its startBy ' || ${iso(sql`d.start_by`)},
          'startBy', ${iso(sql`d.start_by`)},
          'at', ${iso(now)})
        ELSE jsonb_build_object(
          'kind', 'dropped',
          'message', CASE WHEN d.nth > 1
            THEN 'another job of the same periodic task began at the same moment'
            ELSE 'would begin at ' || ${iso(now)} || ', earlier than lastRun ' || ${iso(sql`d.last_run`)}
                 || ' + interval − tolerance = ' || ${iso(sql`d.last_run + ${ms(sql`d.run_interval - d.run_tolerance`)}`)} END,
          'lastRun', ${iso(sql`d.last_run`)},
          'interval', d.run_interval,
          'tolerance', d.run_tolerance,
          'at', ${iso(now)}) END
      FROM decided d
      WHERE j.id = d.id AND d.to_drop
      RETURNING ${jobCols('j')}, NULL::jsonb AS task_state, NULL::bigint AS slot
    ),
    drop_events AS (
      INSERT INTO job_event (job_id, at, kind, detail)
      SELECT x.id, ${now}, 'dropped', jsonb_strip_nulls(jsonb_build_object('error', x.error, 'reason', x.error->>'reason')) FROM dropped x
    ),
    touched AS (
      UPDATE periodic_task t SET last_run = ${now}
      WHERE t.id IN (SELECT d.periodic_task_id FROM decided d WHERE d.has_task AND NOT d.to_drop)
    )
    SELECT ${jobCols('l')}, l.task_state, l.slot, false AS dropped, 0 AS refused, false AS more, false AS contended FROM leased l
    UNION ALL
    SELECT ${jobCols('x')}, x.task_state, x.slot, true, 0, false, false FROM dropped x
    UNION ALL
    -- how many candidates a limit refused, whether lanes may hold more and whether another claim
    -- took a lane's job, so the caller may claim again for their slots
    SELECT ${sql.join(JOB_COLUMNS.map(() => sql`NULL`))}, NULL, NULL, false, (SELECT count(*)::int FROM all_refused), m.more, m.contended
    FROM more m
    WHERE EXISTS (SELECT 1 FROM all_refused) OR m.more OR m.contended`;
  });

  const leased: LeasedInSlot[] = [];
  const dropped: DroppedJob[] = [];
  let refused = 0;
  let more = false;
  let contended = false;
  for (const r of rows) {
    if (r.id === null) {
      refused = r.refused ?? 0;
      more = r.more === true;
      contended = r.contended === true;
    } else if (r.dropped) dropped.push({ id: String(r.id), taskId: r.periodic_task_id, error: r.error });
    else leased.push(leasedFromRow(r, r.task_state ?? null, Number(r.slot) - 1));
  }
  leased.sort((a, b) => a.slot - b.slot);
  return { leased, dropped, refused, more, contended };
}
