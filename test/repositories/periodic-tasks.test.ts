/** The scheduler's take statement on its own, on a real database. */
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import type { Db } from '../../src/db/database.js';
import { withTransaction } from '../../src/db/executor.js';
import { taskTakeDue } from '../../src/repositories/periodic-tasks.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

const NOW = new Date('2026-11-20T09:00:00.000Z');
const take = () =>
  withTransaction(one, (trx) => taskTakeDue(trx, { now: NOW, staleBefore: new Date(NOW.getTime() - 10_000), limit: 1000 }));

let tdb: TestDatabase;
let one: Db;
beforeAll(async () => {
  tdb = await createTestDatabase(4);
  one = tdb.connect(2); // a single connection for Kysely: the statistics flushed below are its own
});
afterAll(async () => {
  await tdb?.destroy();
});
beforeEach(async () => {
  await one.pool.query('DELETE FROM job');
  await one.pool.query('DELETE FROM periodic_task');
  await one.pool.query(
    `INSERT INTO periodic_task (id, task, timer, nextrun, created, concurrency_policy)
     SELECT 'due-' || g, 'report', 'every 1h', $1::timestamptz - interval '1 second', $1::timestamptz - interval '1 hour', 'forbid'
       FROM generate_series(1, 500) g`,
    [NOW],
  );
});

async function sequentialScansOfJob(): Promise<number> {
  await sql`SELECT pg_stat_force_next_flush()`.execute(one.kysely);
  await sql`SELECT pg_stat_clear_snapshot()`.execute(one.kysely);
  const { rows } = await sql<{ n: string }>`SELECT coalesce(seq_scan, 0)::text AS n FROM pg_stat_user_tables WHERE relname = 'job'`.execute(
    one.kysely,
  );
  return Number(rows[0]!.n);
}

it('looks up the open jobs of a whole batch of forbid tasks at once, not task by task', async () => {
  // While the job table is empty (a new database, a first burst) the planner finds a scan of it
  // free; a lookup per task then became a scan per task, and scans of a table that the other lanes
  // fill meanwhile. At most one scan per batch, whatever the plan.
  await one.pool.query('ANALYZE job');
  const before = await sequentialScansOfJob();
  const due = await take();
  const scans = (await sequentialScansOfJob()) - before;
  expect(due).toHaveLength(500);
  expect(scans).toBeLessThanOrEqual(1);
});

it('answers, for each forbid task, one of its queued or running jobs', async () => {
  await one.pool.query(
    `INSERT INTO job (type, run_at, periodic_task_id, scheduled_at, max_attempts, state, lease_token)
     SELECT 'report', $1, 'due-' || g, $1::timestamptz - interval '1 hour' * s, 1,
            (ARRAY['queued', 'running', 'finished'])[s], CASE WHEN s = 2 THEN gen_random_uuid() END
       FROM generate_series(1, 500, 7) g, generate_series(1, 3) s`,
    [NOW],
  );
  const due = await take();
  expect(due).toHaveLength(500);
  const withOpen = due.filter((t) => t.open_job_id !== null);
  expect(withOpen.map((t) => Number(t.id.slice(4))).sort((a, b) => a - b)).toEqual(Array.from({ length: 72 }, (_, i) => 1 + 7 * i));
  const { rows } = await one.pool.query<{ id: number; periodic_task_id: string; state: string }>(
    'SELECT id, periodic_task_id, state FROM job',
  );
  for (const t of withOpen) {
    const job = rows.find((j) => j.id === t.open_job_id)!;
    expect(job.periodic_task_id).toBe(t.id);
    expect(['queued', 'running']).toContain(job.state);
  }
});
