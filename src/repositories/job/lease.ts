import { sql } from 'kysely';
import type { Executor } from '../../db/executor.js';
import type { LeasedJob } from '../../domain/job.js';
import { compiledOnce } from './compile.js';
import { jobCols, type JobRow, leasedFromRow } from './row.js';
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
  type Row = JobRow & { task_state: unknown; dropped: boolean; slot: number | null };
  const rows = await compiledOnce(db, `lease${byType ? '+type' : ''}${byGroup ? '+group' : ''}`, values, (v) => {
    const now = sql`${v.now}::timestamptz`;
    const byGroupSql = byGroup ? sql`AND group_ = ANY(${v.groups}::text[])` : sql``;
    // runnable at millisecond precision, the precision of jobclock's clock and API: a job inserted
    // by SQL with run_at = now() (microseconds) is runnable within the millisecond it names
    const runnable = sql`state = 'queued' AND run_at < ${now} + interval '1 millisecond' ${byGroupSql}`;
    const columns = sql`id, periodic_task_id, run_interval, run_tolerance, priority, run_at`;
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
    return sql<Row>`
    WITH slots AS MATERIALIZED (
      SELECT * FROM jsonb_to_recordset(${v.slots}::jsonb) AS s(n int, worker text, lease bigint)
    ),
    candidates AS MATERIALIZED (${candidates}),
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
    ),
    decided AS MATERIALIZED (
      SELECT r.*,
             r.has_task AND r.run_interval IS NOT NULL AND (
               r.nth > 1 OR (r.last_run IS NOT NULL AND ${now} < r.last_run + ${ms(sql`r.run_interval - r.run_tolerance`)})
             ) AS to_drop
      FROM ranked r
    ),
    assigned AS MATERIALIZED (
      SELECT d.*, count(*) FILTER (WHERE NOT d.to_drop) OVER (ORDER BY d.priority DESC, d.run_at, d.id ROWS UNBOUNDED PRECEDING) AS slot
      FROM decided d
    ),
    leased AS (
      UPDATE job j SET
        state = 'running',
        worker = s.worker,
        attempts = j.attempts + 1,
        lease_token = gen_random_uuid(),
        lease_expires_at = ${now} + ${ms(sql`s.lease`)},
        lease_duration = s.lease,
        started_at = ${now},
        deadline = CASE WHEN j.timebox IS NULL THEN NULL ELSE ${now} + ${ms(sql`j.timebox`)} END,
        finished_at = NULL,
        progress = NULL,
        updated_at = ${now}
      FROM assigned d JOIN slots s ON s.n = d.slot
      WHERE j.id = d.id AND NOT d.to_drop
      RETURNING ${jobCols('j')}, d.task_state, d.slot
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
      WHERE j.id = d.id AND d.to_drop
      RETURNING ${jobCols('j')}, NULL::jsonb AS task_state, NULL::bigint AS slot
    ),
    touched AS (
      UPDATE periodic_task t SET last_run = ${now}
      WHERE t.id IN (SELECT d.periodic_task_id FROM decided d WHERE d.has_task AND NOT d.to_drop)
    )
    SELECT ${jobCols('l')}, l.task_state, l.slot, false AS dropped FROM leased l
    UNION ALL
    SELECT ${jobCols('x')}, x.task_state, x.slot, true FROM dropped x`;
  });

  const leased: LeasedInSlot[] = [];
  const dropped: DroppedJob[] = [];
  for (const r of rows) {
    if (r.dropped) dropped.push({ id: String(r.id), taskId: r.periodic_task_id, error: r.error });
    else leased.push(leasedFromRow(r, r.task_state ?? null, Number(r.slot) - 1));
  }
  leased.sort((a, b) => a.slot - b.slot);
  return { leased, dropped };
}
