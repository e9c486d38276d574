import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { PreparedExecutor } from '../../db/executor.js';
import { compiledOnce } from './compile.js';
import { laneCtes, laneWant, leaseLengthMs, moreCte } from './lease-lanes.js';
import { JOB_COLUMNS, type JobRow, type LeasedInSlot, leasedFromRow } from './row.js';
import { ms } from './sql.js';

/**
 * The columns the claim sends back: not those it sets to what the caller knows (state, worker,
 * lease_token, started_at, updated_at, finished_at, progress) or to what follows from the row
 * (lease_expires_at and deadline from lease_duration and timebox). Four timestamps fewer to format
 * as text and parse again, on every leased job.
 */
const DERIVED = new Set<string>([
  'state',
  'worker',
  'lease_token',
  'lease_expires_at',
  'started_at',
  'deadline',
  'finished_at',
  'progress',
  'updated_at',
]);
const RETURNED = JOB_COLUMNS.filter((c) => !DERIVED.has(c));

/** What the slim claim needs of a lease (see LeaseParams in lease.ts). */
export interface SlimLeaseParams {
  now: Date;
  types?: readonly string[] | undefined;
  groups?: readonly string[] | undefined;
  slots: readonly { worker: string; leaseMs: number | null }[];
}

/** A slim claim's outcome: null when it stood aside for the full statement (nothing was changed). */
export interface SlimLeaseResult {
  leased: LeasedInSlot[];
  more: boolean;
  contended: boolean;
}

/**
 * The lease statement for the common case, in one statement that decides for itself whether it
 * applies: no flow control configured (no paused type or group, no concurrency or rate limit, no
 * default for undeclared groups, and for a lease naming no types no push type), and no candidate of
 * a periodic task or with a startBy. Then the full statement's answer is exactly its claim: no
 * permits to take, no task to lock, nothing to drop, every candidate runs in its slot. It claims
 * the same candidates in the same order (fairness between groups through jobclock_lanes, the
 * same share per lane, `more` and `contended` decided the same way), but without the ~30 stages
 * of the full statement, and takes its slots as two arrays rather than JSON.
 *
 * When any of those conditions does not hold — read in the statement's own snapshot, as the full
 * statement reads them — it leases nothing and answers null: the caller runs the full statement
 * (the row locks this one took ended with it, or are the caller's own in a transaction).
 */
export async function jobLeaseSlim(db: PreparedExecutor, p: SlimLeaseParams): Promise<SlimLeaseResult | null> {
  const byType = p.types !== undefined && p.types.length > 0;
  const byGroup = p.groups !== undefined && p.groups.length > 0;
  const values = {
    now: p.now,
    limit: p.slots.length,
    workers: p.slots.map((s) => s.worker),
    leases: p.slots.map((s) => s.leaseMs),
    // each slot's lease token, made here: gen_random_uuid() cost PostgreSQL ~1 µs a job
    tokens: p.slots.map(() => randomUUID()),
    types: byType ? [...new Set(p.types)] : null,
    groups: byGroup ? [...new Set(p.groups)] : null,
    want: laneWant(p.slots.length),
  };
  type Row = JobRow & { slot: number | null; fallback: boolean; more: boolean; contended: boolean };
  const rows = await compiledOnce(db, `lease-slim${byType ? '+type' : ''}${byGroup ? '+group' : ''}`, values, (v) => {
    const now = sql`${v.now}::timestamptz`;
    // an untyped lease takes no job of a push type (those go to the type's endpoint)
    const pushTypes = byType ? sql`` : sql`OR EXISTS (SELECT 1 FROM push_type)`;
    const laneTypes = byType ? sql`ARRAY(SELECT DISTINCT t FROM unnest(${v.types}::text[]) AS t)` : sql`NULL::text[]`;
    const claim = { byType, now, laneTypes, groups: v.groups, want: v.want, limit: v.limit };
    const lease = leaseLengthMs;
    return sql<Row>`
    WITH gate AS MATERIALIZED (
      SELECT EXISTS (SELECT 1 FROM flow_policy p WHERE p.paused OR p.concurrency IS NOT NULL OR p.rate_limit IS NOT NULL)
          OR EXISTS (SELECT 1 FROM flow_default d WHERE d.kind = 'group' AND (d.concurrency IS NOT NULL OR d.rate_limit IS NOT NULL))
          ${pushTypes} AS full
    ),
    ${laneCtes({
      ...claim,
      blockedGroups: sql`'{}'::text[]`,
      onlyIf: sql`NOT (SELECT g.full FROM gate g)`,
      columns: sql`j.id, j.type, j.group_, j.priority, j.run_at, j.periodic_task_id, j.start_by`,
    })},
    candidates AS MATERIALIZED (
      SELECT p.* FROM (SELECT p.*, row_number() OVER (PARTITION BY p.lane_type, p.group_ ORDER BY p.run_at, p.id) AS turn FROM picked p) p
      ORDER BY p.turn, p.r LIMIT ${v.limit}
    ),
    -- what only the full statement does: flow control, periodic tasks' machinery, startBy
    special AS MATERIALIZED (
      SELECT (SELECT g.full FROM gate g)
          OR EXISTS (SELECT 1 FROM candidates c WHERE c.periodic_task_id IS NOT NULL OR c.start_by IS NOT NULL) AS fallback
    ),
    -- slots in the full statement's order: priority desc, run_at, id
    -- and each slot's worker and lease read from the arrays by position (a join with the arrays
    -- unnested was planned as a nested loop over them: slots × candidates rows)
    assigned AS MATERIALIZED (
      SELECT a.id, a.slot, (${v.workers}::text[])[a.slot] AS worker, (${v.leases}::bigint[])[a.slot] AS lease,
             (${v.tokens}::uuid[])[a.slot] AS token
      FROM (SELECT c.id, row_number() OVER (ORDER BY c.priority DESC, c.run_at, c.id) AS slot FROM candidates c
            WHERE NOT (SELECT x.fallback FROM special x)) a
    ),
    ${moreCte(claim)},
    leased AS (
      UPDATE job j SET
        state = 'running',
        worker = s.worker,
        attempts = j.attempts + 1,
        lease_token = s.token,
        lease_expires_at = ${now} + ${ms(lease)},
        lease_duration = ${lease},
        started_at = ${now},
        deadline = CASE WHEN j.timebox IS NULL THEN NULL ELSE ${now} + ${ms(sql`j.timebox`)} END,
        finished_at = NULL,
        progress = NULL,
        holds_slot = false,
        debounce_until = NULL,
        updated_at = ${now}
      FROM assigned s
      WHERE j.id = s.id
      RETURNING ${sql.join(RETURNED.map((c) => sql.ref(`j.${c}`)))}, s.slot
    )
    SELECT ${sql.join(RETURNED.map((c) => sql.ref(`l.${c}`)))}, l.slot, false AS fallback, false AS more, false AS contended FROM leased l
    UNION ALL
    SELECT ${sql.join(RETURNED.map(() => sql`NULL`))}, NULL, x.fallback, m.more, m.contended
    FROM special x, more m
    WHERE x.fallback OR m.more OR m.contended`;
  });
  const leased: LeasedInSlot[] = [];
  let more = false;
  let contended = false;
  for (const r of rows) {
    if (r.id !== null) {
      // what the claim set, known here: not sent back
      const lease = Number(r.lease_duration);
      r.state = 'running';
      r.worker = p.slots[Number(r.slot) - 1]!.worker;
      r.lease_token = values.tokens[Number(r.slot) - 1]!;
      r.lease_expires_at = new Date(p.now.getTime() + lease);
      r.started_at = p.now;
      r.deadline = r.timebox === null ? null : new Date(p.now.getTime() + Number(r.timebox));
      r.finished_at = null;
      r.progress = null;
      r.updated_at = p.now;
      leased.push(leasedFromRow(r, null, Number(r.slot) - 1));
    } else if (r.fallback) return null;
    else {
      more = r.more;
      contended = r.contended;
    }
  }
  leased.sort((a, b) => a.slot - b.slot);
  return { leased, more, contended };
}
