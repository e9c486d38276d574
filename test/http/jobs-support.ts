/** Helpers for the job tests: a stack on its own database, a small HTTP client, periodic rows by SQL. */
import request from 'supertest';
import type { Clock } from '../../src/clock.js';
import type { TokenEntry } from '../../src/config.js';
import type { Db } from '../../src/db/database.js';
import { createTestStack, type TestStack } from '../support/app.js';

export interface JobsApi {
  stack: TestStack;
  /** Requests are sent at once (supertest alone would wait until awaited). */
  post(path: string, body?: unknown, token?: string): Promise<request.Response>;
  get(path: string, token?: string): Promise<request.Response>;
  patch(path: string, body: unknown, token?: string): Promise<request.Response>;
  /** POST /jobs, expecting 201 or 200; returns the job. */
  create(body: Record<string, unknown>): Promise<Record<string, any>>;
  /** POST /jobs/next, returns the leased jobs ([] for 204). */
  lease(body: Record<string, unknown>): Promise<Record<string, any>[]>;
}

export async function jobsApi(options: {
  db: Db;
  clock?: Clock;
  tokens?: TokenEntry[];
  instanceId?: string;
  retentionMs?: number;
}): Promise<JobsApi> {
  const stack = await createTestStack(options);
  const server = stack.app.server;
  const send = (t: request.Test, token?: string): Promise<request.Response> => (token ? t.set('authorization', token) : t).then((r) => r);
  const api: JobsApi = {
    stack,
    post: (path, body, token) =>
      send(
        request(server)
          .post(path)
          .send(body as object),
        token,
      ),
    get: (path, token) => send(request(server).get(path), token),
    patch: (path, body, token) =>
      send(
        request(server)
          .patch(path)
          .send(body as object),
        token,
      ),
    async create(body) {
      const res = await api.post('/jobs', body);
      if (res.status !== 201 && res.status !== 200) throw new Error(`POST /jobs answered ${res.status}: ${JSON.stringify(res.body)}`);
      return res.body;
    },
    async lease(body) {
      const res = await api.post('/jobs/next', body);
      if (res.status === 204) return [];
      if (res.status !== 200) throw new Error(`POST /jobs/next answered ${res.status}: ${JSON.stringify(res.body)}`);
      return res.body.jobs;
    },
  };
  return api;
}

/** A periodic_task row as the PeriodicScheduler's engineer would create it, inserted by SQL. */
export async function insertTask(
  db: Db,
  t: { id: string; lastRun?: Date | null; state?: unknown; policy?: 'forbid' | 'allow' | 'replace' },
) {
  await db.pool.query(
    `INSERT INTO periodic_task (id, task, timer, concurrency_policy, last_run, state) VALUES ($1, $2, 'every 1m', $3, $4, $5::jsonb)`,
    [t.id, `task.${t.id}`, t.policy ?? 'allow', t.lastRun ?? null, t.state === undefined ? null : JSON.stringify(t.state)],
  );
}

/**
 * A job of a periodic task as the scheduler submits it: max_attempts 1, run_at = the scheduled
 * time, and for policy allow the drop check's interval and tolerance. Returns the id.
 */
export async function insertTaskJob(
  db: Db,
  j: {
    taskId: string;
    runAt: Date;
    type?: string;
    intervalMs?: number | null;
    toleranceMs?: number | null;
    timeboxMs?: number | null;
    createdAt?: Date;
  },
): Promise<string> {
  const { rows } = await db.pool.query<{ id: number }>(
    `INSERT INTO job (type, periodic_task_id, scheduled_at, run_at, max_attempts, run_interval, run_tolerance, timebox, created_at, updated_at)
     VALUES ($1, $2, $3, $3, 1, $4, $5, $6, $7, $7) RETURNING id`,
    [
      j.type ?? `task.${j.taskId}`,
      j.taskId,
      j.runAt,
      j.intervalMs === undefined ? 60_000 : j.intervalMs,
      j.toleranceMs === undefined ? 5_000 : j.toleranceMs,
      j.timeboxMs === undefined ? 30_000 : j.timeboxMs,
      j.createdAt ?? j.runAt,
    ],
  );
  return String(rows[0]!.id);
}

export async function taskRow(db: Db, id: string): Promise<{ last_run: Date | null; state: unknown }> {
  const { rows } = await db.pool.query(`SELECT last_run, state FROM periodic_task WHERE id = $1`, [id]);
  return rows[0];
}

export const iso = (d: Date) => d.toISOString();

/**
 * Runs `whileLocked` while another connection holds an EXCLUSIVE lock on the job table: the
 * statements that requests send meanwhile block, so whatever arrives after them has to queue up.
 * Makes tests of group commit independent of how fast requests happen to arrive.
 */
export async function holdingJobTable(db: Db, whileLocked: () => Promise<void>): Promise<void> {
  const client = await db.pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('LOCK TABLE job IN EXCLUSIVE MODE');
    await whileLocked();
  } finally {
    await client.query('COMMIT');
    client.release();
  }
}

export { sleep, until } from '../support/wait.js';

/** Three instances on one database, each with its own pool and listener (the first on tdb.db). */
export async function threeInstances(tdb: { db: Db; connect(): Db }): Promise<JobsApi[]> {
  return [
    await jobsApi({ db: tdb.db, instanceId: 'a' }),
    await jobsApi({ db: tdb.connect(), instanceId: 'b' }),
    await jobsApi({ db: tdb.connect(), instanceId: 'c' }),
  ];
}
