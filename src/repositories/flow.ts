/**
 * Flow-control policies of job types and groups (migration 0007): the policy rows, their permit rows
 * (slots for a concurrency limit, tokens for a rate limit), and the overview of each key with its
 * open jobs. The lease statement (job/lease.ts) enforces them.
 */
import { sql } from 'kysely';
import type { Executor } from '../db/executor.js';
import { CHANNELS } from '../db/notifications.js';
import { RUNNING_UNDER_DEFAULT } from './flow-default.js';
import type { PolicyFacts } from '../domain/explain.js';

export type FlowKind = 'type' | 'group';

export interface FlowPolicy {
  paused: boolean;
  concurrency: number | null;
  rate: { limit: number; windowMs: number } | null;
}

export interface FlowKeyRow extends FlowPolicy {
  name: string;
  queued: number;
  scheduled: number;
  running: number;
  /** Waiting for dependencies. */
  waiting: number;
  oldestQueuedAt: Date | null;
}

/** Changes to a policy; undefined leaves a field as it is, null clears a limit. */
export interface FlowPatch {
  paused?: boolean | undefined;
  concurrency?: number | null | undefined;
  rate?: { limit: number; windowMs: number } | null | undefined;
}

const COLUMN: Record<FlowKind, string> = { type: 'type', group: 'group_' };

interface Row {
  name: string;
  paused: boolean | null;
  concurrency: number | null;
  rate_limit: number | null;
  rate_window_ms: number | null;
  queued: number | null;
  scheduled: number | null;
  running: number | null;
  waiting: number | null;
  oldest: Date | null;
}

const toKey = (r: Row): FlowKeyRow => ({
  name: r.name,
  paused: r.paused ?? false,
  concurrency: r.concurrency,
  rate: r.rate_limit === null || r.rate_window_ms === null ? null : { limit: r.rate_limit, windowMs: Number(r.rate_window_ms) },
  queued: r.queued ?? 0,
  scheduled: r.scheduled ?? 0,
  running: r.running ?? 0,
  waiting: r.waiting ?? 0,
  oldestQueuedAt: r.oldest,
});

/**
 * The types (or groups) that have open jobs or a policy, in name order after `after`, with their
 * counts at `now` and their policy; `name` picks one. Reads only open jobs, through the lease's
 * partial indexes (queued: index-only, by type or group; running: the lease-expiry index; waiting:
 * its own index, empty without dependencies) and the
 * policy table: its cost follows the open jobs, never the history. (One `state IN (queued,
 * running)` scan let the planner choose a scan of the whole table: 270 ms behind 2 M final jobs.)
 */
export async function flowKeys(
  db: Executor,
  kind: FlowKind,
  now: Date,
  opts: { name?: string | undefined; after?: string | undefined; limit: number },
): Promise<FlowKeyRow[]> {
  const col = sql.ref(COLUMN[kind]);
  const one = opts.name === undefined ? sql`` : sql`AND ${col} = ${opts.name}`;
  const { rows } = await sql<Row>`
    WITH open AS (
      SELECT name, sum(queued)::int AS queued, sum(scheduled)::int AS scheduled, sum(running)::int AS running,
             sum(waiting)::int AS waiting, min(oldest) AS oldest
        FROM (
          SELECT ${col} AS name,
                 count(*) FILTER (WHERE run_at <= ${now}) AS queued,
                 count(*) FILTER (WHERE run_at > ${now}) AS scheduled,
                 0 AS running,
                 0 AS waiting,
                 min(run_at) FILTER (WHERE run_at <= ${now}) AS oldest
            FROM job
           WHERE state = 'queued' ${one}
           GROUP BY 1
          UNION ALL
          SELECT ${col}, 0, 0, count(*), 0, NULL FROM job WHERE state = 'running' ${one} GROUP BY 1
          UNION ALL
          SELECT ${col}, 0, 0, 0, count(*), NULL FROM job WHERE state = 'waiting' ${one} GROUP BY 1
        ) o
       GROUP BY 1
    ),
    pol AS (
      SELECT name, paused, concurrency, rate_limit, rate_window_ms FROM flow_policy
       WHERE kind = ${kind} ${opts.name === undefined ? sql`` : sql`AND name = ${opts.name}`}
    )
    SELECT coalesce(o.name, p.name) AS name, p.paused, p.concurrency, p.rate_limit, p.rate_window_ms,
           o.queued, o.scheduled, o.running, o.waiting, o.oldest
      FROM open o FULL JOIN pol p ON p.name = o.name
     WHERE ${opts.after === undefined ? sql`true` : sql`coalesce(o.name, p.name) > ${opts.after}`}
     ORDER BY 1
     LIMIT ${opts.limit}`.execute(db.kysely);
  return rows.map(toKey);
}

/**
 * Applies a patch to the policy of a key (creating it), makes sure its permit rows exist, and wakes
 * waiting workers (a lifted pause or a raised limit may make jobs runnable). A policy left with
 * nothing to enforce is removed. Returns the policy as it is now. Run it in a transaction.
 */
export async function flowPolicyPatch(db: Executor, kind: FlowKind, name: string, patch: FlowPatch, now: Date): Promise<FlowPolicy> {
  const setRate = patch.rate !== undefined;
  const { rows } = await sql<{ paused: boolean; concurrency: number | null; rate_limit: number | null; rate_window_ms: number | null }>`
    INSERT INTO flow_policy AS p (kind, name, paused, concurrency, rate_limit, rate_window_ms, updated_at)
    VALUES (${kind}, ${name}, ${patch.paused ?? false}, ${patch.concurrency ?? null}::int,
            ${patch.rate?.limit ?? null}::int, ${patch.rate?.windowMs ?? null}::bigint, ${now})
    ON CONFLICT (kind, name) DO UPDATE SET
      paused = ${patch.paused === undefined ? sql`p.paused` : sql`${patch.paused}`},
      concurrency = ${patch.concurrency === undefined ? sql`p.concurrency` : sql`${patch.concurrency}::int`},
      rate_limit = ${setRate ? sql`${patch.rate?.limit ?? null}::int` : sql`p.rate_limit`},
      rate_window_ms = ${setRate ? sql`${patch.rate?.windowMs ?? null}::bigint` : sql`p.rate_window_ms`},
      updated_at = ${now}
    RETURNING paused, concurrency, rate_limit, rate_window_ms`.execute(db.kysely);
  const r = rows[0]!;
  if (r.concurrency !== null) {
    await sql`INSERT INTO flow_slot (kind, name, n) SELECT ${kind}, ${name}, g FROM generate_series(1, ${r.concurrency}::int) g
              ON CONFLICT DO NOTHING`.execute(db.kysely);
    // slots above the limit that hold no job are not needed any more
    await sql`DELETE FROM flow_slot WHERE kind = ${kind} AND name = ${name} AND n > ${r.concurrency}::int AND job_id IS NULL`.execute(
      db.kysely,
    );
  } else {
    await sql`DELETE FROM flow_slot WHERE kind = ${kind} AND name = ${name} AND job_id IS NULL`.execute(db.kysely);
  }
  if (r.rate_limit !== null) {
    await sql`INSERT INTO flow_token (kind, name, n) SELECT ${kind}, ${name}, g FROM generate_series(1, ${r.rate_limit}::int) g
              ON CONFLICT DO NOTHING`.execute(db.kysely);
  } else {
    await sql`DELETE FROM flow_token WHERE kind = ${kind} AND name = ${name}`.execute(db.kysely);
  }
  if (!r.paused && r.concurrency === null && r.rate_limit === null) {
    await sql`DELETE FROM flow_policy WHERE kind = ${kind} AND name = ${name}`.execute(db.kysely);
  }
  await sql`SELECT pg_notify(${CHANNELS.jobs}, '')`.execute(db.kysely);
  return {
    paused: r.paused,
    concurrency: r.concurrency,
    rate: r.rate_limit === null || r.rate_window_ms === null ? null : { limit: r.rate_limit, windowMs: Number(r.rate_window_ms) },
  };
}

/** The policies of a job's type and group at `now`, with their free permits (GET /jobs/{id}/explain). */
export async function flowFactsOf(db: Executor, type: string, group: string, now: Date): Promise<PolicyFacts[]> {
  const { rows } = await sql<{
    kind: FlowKind;
    name: string;
    paused: boolean;
    concurrency: number | null;
    rate_limit: number | null;
    rate_window_ms: number | null;
    running: number;
    free_slots: number;
    free_tokens: number;
    next_token_at: Date | null;
    groups_default: boolean;
  }>`
    SELECT * FROM (
    SELECT p.kind, p.name, p.paused, p.concurrency, p.rate_limit, p.rate_window_ms,
           (SELECT count(*) FROM flow_slot s WHERE s.kind = p.kind AND s.name = p.name AND s.job_id IS NOT NULL)::int AS running,
           (SELECT count(*) FROM flow_slot s WHERE s.kind = p.kind AND s.name = p.name AND s.n <= p.concurrency AND s.job_id IS NULL)::int AS free_slots,
           (SELECT count(*) FROM flow_token t WHERE t.kind = p.kind AND t.name = p.name AND t.n <= p.rate_limit
               AND (t.used_at IS NULL OR t.used_at <= ${now}::timestamptz - p.rate_window_ms * interval '1 millisecond'))::int AS free_tokens,
           (SELECT min(t.used_at) + p.rate_window_ms * interval '1 millisecond' FROM flow_token t
             WHERE t.kind = p.kind AND t.name = p.name AND t.n <= p.rate_limit) AS next_token_at,
           false AS groups_default
      FROM flow_policy p
     WHERE (p.kind = 'type' AND p.name = ${type}) OR (p.kind = 'group' AND p.name = ${group})
    UNION ALL
    -- a group without a policy of its own under /groups-default: its jobs running under it, and its
    -- tokens (made on demand)
    SELECT 'group', ${group}, false, d.concurrency, d.rate_limit, d.rate_window_ms, h.n, greatest(d.concurrency - h.n, 0),
           greatest(d.rate_limit - u.n, 0), u.next_at, true
      FROM flow_default d,
           LATERAL (SELECT count(*)::int AS n FROM job j
                     WHERE ${RUNNING_UNDER_DEFAULT} AND hashtext(j.group_) = hashtext(${group}) AND j.group_ = ${group}) h,
           LATERAL (SELECT count(*)::int AS n, min(t.used_at) + d.rate_window_ms * interval '1 millisecond' AS next_at FROM flow_token t
                     WHERE t.kind = 'default-group' AND t.name = ${group} AND t.n <= d.rate_limit
                       AND t.used_at > ${now}::timestamptz - d.rate_window_ms * interval '1 millisecond') u
     WHERE d.kind = 'group' AND (d.concurrency IS NOT NULL OR d.rate_limit IS NOT NULL)
       AND NOT EXISTS (SELECT 1 FROM flow_policy p WHERE p.kind = 'group' AND p.name = ${group})
    ) x
    ORDER BY x.kind DESC`.execute(db.kysely);
  return rows.map((r) => ({
    kind: r.kind,
    name: r.name,
    paused: r.paused,
    concurrency: r.concurrency,
    running: r.running,
    freeSlots: r.free_slots,
    rate: r.rate_limit === null || r.rate_window_ms === null ? null : { limit: r.rate_limit, windowMs: Number(r.rate_window_ms) },
    freeTokens: r.free_tokens,
    nextTokenAt: r.next_token_at,
    ...(r.groups_default ? { groupsDefault: true } : {}),
  }));
}

/** Runnable queued jobs that come before a job in lease order, counted up to `cap`. */
export async function jobsAhead(
  db: Executor,
  job: { id: string; priority: number; runAt: Date; group: string },
  now: Date,
  cap: number,
): Promise<{ count: number; capped: boolean }> {
  // Groups of equal priority take turns, so what stands before a job is every runnable job of a
  // higher priority and the runnable jobs of its own group ahead of it in runAt order.
  const { rows } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM (
      (SELECT 1 FROM job
        WHERE state = 'queued' AND run_at < ${now}::timestamptz + interval '1 millisecond' AND priority > ${job.priority}
        LIMIT ${cap + 1})
      UNION ALL
      (SELECT 1 FROM job
        WHERE state = 'queued' AND priority = ${job.priority} AND hashtext(group_) = hashtext(${job.group}) AND group_ = ${job.group}
          AND (run_at, id) < (${job.runAt}::timestamptz, ${job.id}::bigint)
        LIMIT ${cap + 1})
    ) x`.execute(db.kysely);
  const n = rows[0]?.n ?? 0;
  return n > cap ? { count: cap, capped: true } : { count: n, capped: false };
}
