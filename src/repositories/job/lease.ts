import { sql } from 'kysely';
import type { Executor } from '../../db/executor.js';
import type { LeasedJob } from '../../domain/job.js';
import { compiledOnce } from './compile.js';
import { JOB_COLUMNS, jobCols, type JobRow, leasedFromRow } from './row.js';
import { iso, ms } from './sql.js';

/** One place in a claim: a job for this worker, leased for this long. */
export interface LeaseSlot {
  worker: string;
  leaseMs: number;
}

export interface LeaseParams {
  now: Date;
  types?: readonly string[] | undefined;
  groups?: readonly string[] | undefined;
  /** One per job wanted; claimed jobs fill them in order. */
  slots: readonly LeaseSlot[];
}

export interface DroppedJob {
  id: string;
  taskId: string | null;
  error: unknown;
}

export interface LeasedInSlot extends LeasedJob {
  /** Index into LeaseParams.slots. */
  slot: number;
}

export interface LeaseResult {
  /** Candidates a type or group limit refused a permit (another lease took it first): they stay queued. */
  refused?: number;
  /** In claim order (priority desc, run_at, id), which is also slot order. */
  leased: LeasedInSlot[];
  dropped: DroppedJob[];
}

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
 * Without jobs of periodic tasks among the candidates, those parts touch no rows. Dropped jobs are
 * returned apart; the caller claims again for the slots they left empty.
 */
export async function jobLease(db: Executor, p: LeaseParams): Promise<LeaseResult> {
  if (p.slots.length === 0) return { leased: [], dropped: [] };
  const byType = p.types !== undefined && p.types.length > 0;
  const byGroup = p.groups !== undefined && p.groups.length > 0;
  const values = {
    now: p.now,
    limit: p.slots.length,
    slots: JSON.stringify(p.slots.map((s, i) => ({ n: i + 1, worker: s.worker, lease: s.leaseMs }))),
    types: byType ? [...new Set(p.types)] : null,
    groups: byGroup ? [...p.groups!] : null,
  };
  type Row = JobRow & { task_state: unknown; dropped: boolean; slot: number | null; refused: number };
  const rows = await compiledOnce(db, `lease${byType ? '+type' : ''}${byGroup ? '+group' : ''}`, values, (v) => {
    const now = sql`${v.now}::timestamptz`;
    const byGroupSql = byGroup ? sql`AND group_ = ANY(${v.groups}::text[])` : sql``;
    // Flow control: jobs of a paused type or group, or of one whose limit has no permit free (as of
    // this statement's snapshot), are not candidates. Without policies both arrays are empty.
    // In a CASE, so the planner keeps its estimate of how many rows pass: for `type <> ALL(array)`
    // (what NOT (= ANY) becomes) with an array unknown at planning time it estimated almost none,
    // and sorted the whole runnable queue instead of walking the lease index to its LIMIT.
    const open = sql`CASE WHEN cardinality((SELECT b.types FROM blocked_keys b)) + cardinality((SELECT b.groups FROM blocked_keys b)) = 0 THEN true
      ELSE NOT (type = ANY((SELECT b.types FROM blocked_keys b)::text[]) OR group_ = ANY((SELECT b.groups FROM blocked_keys b)::text[])) END`;
    // runnable at millisecond precision, the precision of jobclock's clock and API: a job inserted
    // by SQL with run_at = now() (microseconds) is runnable within the millisecond it names
    const runnable = sql`state = 'queued' AND run_at < ${now} + interval '1 millisecond' ${byGroupSql} AND ${open}`;
    const columns = sql`id, type, group_, periodic_task_id, run_interval, run_tolerance, priority, run_at`;
    // With types, each type is claimed from its own index (job_lease_type_idx, already in claim
    // order) and the best of them are kept. One scan of the lease index filtered by type walked
    // past every queued job of other types first: 50,000 rows (14 ms) for a rare type behind a
    // backlog. A type's rows that lose to another type's stay locked only until this statement
    // commits.
    const candidates = byType
      ? sql`SELECT c.* FROM unnest(${v.types}::text[]) AS t(type)
            CROSS JOIN LATERAL (
              SELECT ${columns} FROM job
              WHERE ${runnable} AND job.type = t.type
              ORDER BY priority DESC, run_at, id
              LIMIT ${v.limit}
              FOR UPDATE SKIP LOCKED
            ) c
            ORDER BY c.priority DESC, c.run_at, c.id
            LIMIT ${v.limit}`
      : sql`SELECT ${columns} FROM job
            WHERE ${runnable}
            ORDER BY priority DESC, run_at, id
            LIMIT ${v.limit}
            FOR UPDATE SKIP LOCKED`;
    const windowStart = (alias: string) => sql`${now} - ${ms(sql`${sql.ref(`${alias}.rate_window_ms`)}`)}`;
    return sql<Row>`
    WITH slots AS MATERIALIZED (
      SELECT * FROM jsonb_to_recordset(${v.slots}::jsonb) AS s(n int, worker text, lease bigint)
    ),
    policies AS MATERIALIZED (
      SELECT kind, name, paused, concurrency, rate_limit, rate_window_ms FROM flow_policy
      WHERE paused OR concurrency IS NOT NULL OR rate_limit IS NOT NULL
    ),
    blocked_keys AS MATERIALIZED (
      SELECT coalesce(array_agg(p.name) FILTER (WHERE p.kind = 'type'), '{}') AS types,
             coalesce(array_agg(p.name) FILTER (WHERE p.kind = 'group'), '{}') AS groups
      FROM policies p
      WHERE p.paused
         OR (p.concurrency IS NOT NULL AND NOT EXISTS (
               SELECT 1 FROM flow_slot s WHERE s.kind = p.kind AND s.name = p.name AND s.n <= p.concurrency AND s.job_id IS NULL))
         OR (p.rate_limit IS NOT NULL AND NOT EXISTS (
               SELECT 1 FROM flow_token t WHERE t.kind = p.kind AND t.name = p.name AND t.n <= p.rate_limit
                 AND (t.used_at IS NULL OR t.used_at <= ${windowStart('p')})))
    ),
    candidates AS MATERIALIZED (${candidates}),
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
    free_slots AS MATERIALIZED (
      SELECT f.kind, f.name, f.n, f.released_at, row_number() OVER (PARTITION BY f.kind, f.name ORDER BY f.n) AS pn
      FROM (
        SELECT s.kind, s.name, s.n, s.released_at FROM flow_slot s
        JOIN policies p ON p.kind = s.kind AND p.name = s.name
        WHERE s.job_id IS NULL AND s.n <= p.concurrency
          AND (s.kind, s.name) IN (SELECT kind, name FROM needs WHERE slot)
        FOR UPDATE OF s SKIP LOCKED
      ) f
    ),
    free_tokens AS MATERIALIZED (
      SELECT f.kind, f.name, f.n, row_number() OVER (PARTITION BY f.kind, f.name ORDER BY f.used_at NULLS FIRST, f.n) AS pn
      FROM (
        SELECT t.kind, t.name, t.n, t.used_at FROM flow_token t
        JOIN policies p ON p.kind = t.kind AND p.name = t.name
        WHERE t.n <= p.rate_limit AND (t.used_at IS NULL OR t.used_at <= ${windowStart('p')})
          AND (t.kind, t.name) IN (SELECT kind, name FROM needs WHERE token)
        FOR UPDATE OF t SKIP LOCKED
      ) f
    ),
    slot_grants AS MATERIALIZED (
      SELECT n.id, f.kind, f.name, f.n, f.released_at FROM needs n JOIN free_slots f ON f.kind = n.kind AND f.name = n.name AND f.pn = n.rn WHERE n.slot
    ),
    token_grants AS MATERIALIZED (
      SELECT n.id, f.kind, f.name, f.n FROM needs n JOIN free_tokens f ON f.kind = n.kind AND f.name = n.name AND f.pn = n.rn WHERE n.token
    ),
    -- a candidate runs only with every permit its limits ask for; a refused one stays queued
    refused AS MATERIALIZED (
      SELECT DISTINCT n.id FROM needs n
      WHERE (n.slot AND NOT EXISTS (SELECT 1 FROM slot_grants g WHERE g.id = n.id AND g.kind = n.kind AND g.name = n.name))
         OR (n.token AND NOT EXISTS (SELECT 1 FROM token_grants g WHERE g.id = n.id AND g.kind = n.kind AND g.name = n.name))
    ),
    tasks AS MATERIALIZED (
      SELECT t.id, t.last_run, t.state
      FROM periodic_task t
      WHERE t.id IN (SELECT c.periodic_task_id FROM candidates c WHERE c.periodic_task_id IS NOT NULL)
      ORDER BY t.id
      FOR NO KEY UPDATE OF t
    ),
    ranked AS MATERIALIZED (
      SELECT c.id, c.periodic_task_id, c.run_interval, coalesce(c.run_tolerance, 0) AS run_tolerance,
             c.priority, c.run_at, t.id IS NOT NULL AS has_task, t.last_run, t.state AS task_state,
             row_number() OVER (PARTITION BY c.periodic_task_id ORDER BY c.priority DESC, c.run_at, c.id) AS nth
      FROM candidates c LEFT JOIN tasks t ON t.id = c.periodic_task_id
      WHERE c.id NOT IN (SELECT id FROM refused)
    ),
    decided AS MATERIALIZED (
      SELECT r.*,
             r.has_task AND r.run_interval IS NOT NULL AND (
               r.nth > 1 OR (r.last_run IS NOT NULL AND ${now} < r.last_run + ${ms(sql`r.run_interval - r.run_tolerance`)})
             ) AS to_drop
      FROM ranked r
    ),
    assigned AS MATERIALIZED (
      SELECT d.*, count(*) FILTER (WHERE NOT d.to_drop) OVER (ORDER BY d.priority DESC, d.run_at, d.id ROWS UNBOUNDED PRECEDING) AS slot,
             EXISTS (SELECT 1 FROM slot_grants g WHERE g.id = d.id) AS holds_slot,
             -- not before the job that held its slot stopped (see flow_slot.released_at)
             greatest(${now}, (SELECT max(g.released_at) FROM slot_grants g WHERE g.id = d.id)) AS start_at
      FROM decided d
    ),
    leased AS (
      UPDATE job j SET
        state = 'running',
        worker = s.worker,
        attempts = j.attempts + 1,
        lease_token = gen_random_uuid(),
        lease_expires_at = d.start_at + ${ms(sql`s.lease`)},
        lease_duration = s.lease,
        started_at = d.start_at,
        deadline = CASE WHEN j.timebox IS NULL THEN NULL ELSE d.start_at + ${ms(sql`j.timebox`)} END,
        finished_at = NULL,
        progress = NULL,
        holds_slot = d.holds_slot,
        updated_at = ${now}
      FROM assigned d JOIN slots s ON s.n = d.slot
      -- the id list lets the planner probe the primary key: with the generic plan's estimate for
      -- LIMIT $n (a tenth of the queue), a join alone turned into a scan of the whole table once
      -- about 200,000 jobs were queued
      WHERE j.id = d.id AND NOT d.to_drop AND j.id = ANY (ARRAY(SELECT a.id FROM assigned a WHERE NOT a.to_drop))
      RETURNING ${jobCols('j')}, d.task_state, d.slot
    ),
    took_slots AS (
      UPDATE flow_slot s SET job_id = g.id
      FROM slot_grants g JOIN assigned a ON a.id = g.id AND NOT a.to_drop
      WHERE s.kind = g.kind AND s.name = g.name AND s.n = g.n
    ),
    took_tokens AS (
      UPDATE flow_token t SET used_at = ${now}
      FROM token_grants g JOIN assigned a ON a.id = g.id AND NOT a.to_drop
      WHERE t.kind = g.kind AND t.name = g.name AND t.n = g.n
    ),
    dropped AS (
      UPDATE job j SET
        state = 'dropped',
        finished_at = ${now},
        lease_token = NULL,
        updated_at = ${now},
        error = jsonb_build_object(
          'kind', 'dropped',
          'message', CASE WHEN d.nth > 1
            THEN 'another job of the same periodic task began at the same moment'
            ELSE 'would begin at ' || ${iso(now)} || ', earlier than lastRun ' || ${iso(sql`d.last_run`)}
                 || ' + interval − tolerance = ' || ${iso(sql`d.last_run + ${ms(sql`d.run_interval - d.run_tolerance`)}`)} END,
          'lastRun', ${iso(sql`d.last_run`)},
          'interval', d.run_interval,
          'tolerance', d.run_tolerance,
          'at', ${iso(now)})
      FROM decided d
      WHERE j.id = d.id AND d.to_drop AND j.id = ANY (ARRAY(SELECT x.id FROM decided x WHERE x.to_drop))
      RETURNING ${jobCols('j')}, NULL::jsonb AS task_state, NULL::bigint AS slot
    ),
    drop_events AS (
      INSERT INTO job_event (job_id, at, kind, detail)
      SELECT x.id, ${now}, 'dropped', jsonb_build_object('error', x.error) FROM dropped x
    ),
    touched AS (
      UPDATE periodic_task t SET last_run = ${now}
      WHERE t.id IN (SELECT d.periodic_task_id FROM decided d WHERE d.has_task AND NOT d.to_drop)
    )
    SELECT ${jobCols('l')}, l.task_state, l.slot, false AS dropped, 0 AS refused FROM leased l
    UNION ALL
    SELECT ${jobCols('x')}, x.task_state, x.slot, true, 0 FROM dropped x
    UNION ALL
    -- how many candidates a limit refused, so the caller may claim again for their slots
    SELECT ${sql.join(JOB_COLUMNS.map(() => sql`NULL`))}, NULL, NULL, false, count(*)::int FROM refused HAVING count(*) > 0`;
  });

  const leased: LeasedInSlot[] = [];
  const dropped: DroppedJob[] = [];
  let refused = 0;
  for (const r of rows) {
    if (r.refused > 0) refused = r.refused;
    else if (r.dropped) dropped.push({ id: String(r.id), taskId: r.periodic_task_id, error: r.error });
    else leased.push(leasedFromRow(r, r.task_state ?? null, Number(r.slot) - 1));
  }
  leased.sort((a, b) => a.slot - b.slot);
  return { leased, dropped, refused };
}
