/**
 * The groups default's probes of running jobs read job_default_running_idx (migration 0037), not
 * every running job, even when the table's statistics were taken while no job ran under the
 * default (a new or just upgraded database): said as `state = 'running'`, their condition also fit
 * job_lease_expiry_idx, which the planner then took. Measured in buffers: a probe of the right index
 * reads a few pages, a scan of the running jobs hundreds.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

let tdb: TestDatabase;
const NOW = '2026-11-20T09:00:00.000Z';
const GROUPS = Array.from({ length: 50 }, (_, i) => `customer-${i}`);

beforeAll(async () => {
  tdb = await createTestDatabase(2);
  const q = (text: string) => tdb.db.pool.query(text);
  // 3,000 jobs running outside the default, analyzed as such: no job under the default yet
  await q(`INSERT INTO job (type, group_, args, run_at, state, attempts, worker, lease_token, lease_expires_at, started_at, updated_at)
           SELECT 't', 'other-' || g, NULL, '${NOW}', 'running', 1, 'w', gen_random_uuid(), '${NOW}'::timestamptz + interval '1 minute',
                  '${NOW}', '${NOW}'
           FROM generate_series(1, 3000) g`);
  await q('ANALYZE job');
  // then, under the default: one running job and one ended job in each of the first 10 groups
  await q(`INSERT INTO job (type, group_, args, run_at, state, attempts, worker, lease_token, lease_expires_at, started_at, updated_at, group_default, holds_slot)
           SELECT 't', 'customer-' || g, NULL, '${NOW}', 'running', 1, 'w', gen_random_uuid(), '${NOW}'::timestamptz + interval '1 minute',
                  '${NOW}', '${NOW}', true, true
           FROM generate_series(0, 9) g`);
  await q(`INSERT INTO job (type, group_, args, run_at, state, attempts, worker, started_at, finished_at, updated_at, group_default)
           SELECT 't', 'customer-' || g, NULL, '${NOW}', 'finished', 1, 'w', '${NOW}', '${NOW}', '${NOW}', true
           FROM generate_series(0, 9) g`);
}, 60_000);
afterAll(async () => {
  await tdb?.destroy();
});

/** Shared buffers the statement reads (functions' own statements included), run ANALYZE'd. */
async function buffersOf(text: string, values: unknown[]): Promise<number> {
  const { rows } = await tdb.db.pool.query<{ 'QUERY PLAN': [{ Plan: { 'Shared Hit Blocks': number; 'Shared Read Blocks': number } }] }>(
    `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`,
    values,
  );
  const plan = rows[0]!['QUERY PLAN'][0].Plan;
  return plan['Shared Hit Blocks'] + plan['Shared Read Blocks'];
}

/** The most buffers of `runs` runs (plpgsql plans its statements anew for the first five calls, then keeps one). */
async function mostBuffers(runs: number, text: string, values: unknown[]): Promise<number> {
  let most = 0;
  for (let i = 0; i < runs; i++) most = Math.max(most, await buffersOf(text, values));
  return most;
}

describe('the groups default on statistics taken before any job ran under it', () => {
  it('jobclock_default_starts counts a group by its own entries', async () => {
    const most = await mostBuffers(8, `SELECT jobclock_default_starts($1::text[], $2::int[], $3::boolean[], 1, $4::timestamptz)`, [
      GROUPS,
      GROUPS.map(() => 1),
      GROUPS.map(() => true),
      NOW,
    ]);
    // two probes of a few pages per group; a scan of the running jobs reads ~20 pages per group
    expect(most).toBeLessThan(GROUPS.length * 8);
  });

  it('the answer: a group with a job running is refused, the others start then or after their last end', async () => {
    // customer-40's last job ended 5 s after NOW by the clock that recorded it
    const ended = new Date(Date.parse(NOW) + 5_000);
    await tdb.db.pool.query(
      `INSERT INTO job (type, group_, args, run_at, state, attempts, worker, started_at, finished_at, updated_at, group_default)
       VALUES ('t', 'customer-40', NULL, $1, 'finished', 1, 'w', $1, $2, $2, true)`,
      [NOW, ended],
    );
    const { rows } = await tdb.db.pool.query<{ at: (Date | null)[] }>(
      `SELECT jobclock_default_starts($1::text[], $2::int[], $3::boolean[], 1, $4::timestamptz) AS at`,
      [['customer-3', 'customer-30', 'customer-31', 'customer-40', 'customer-41'], [1, 1, 1, 1, 2], [true, true, false, true, true], NOW],
    );
    // running: refused; none ended: now; not locked: refused; ended later: then; ranked 2nd of 1: refused
    expect(rows[0]!.at).toEqual([null, new Date(NOW), null, ended, null]);
  });

  it('jobclock_default_admit (the full statement) counts a group by its own entries', async () => {
    const most = await mostBuffers(8, `SELECT * FROM jobclock_default_admit($1::text[], 1)`, [GROUPS]);
    expect(most).toBeLessThan(GROUPS.length * 8);
  });

  it('the lanes look a group up by its own entries', async () => {
    // 50 queued jobs, one per group: the walk passes each group's lane and probes its running jobs
    await tdb.db.pool.query(`INSERT INTO job (type, group_, args, run_at) SELECT 't', unnest($1::text[]), NULL, '${NOW}'`, [GROUPS]);
    const walk = `SELECT count(*) FROM jobclock_lanes(NULL::text[], NULL::text[], $1::timestamptz, 100, 0, '{}'::text[], 1)`;
    const { rows } = await tdb.db.pool.query<{ count: string }>(walk, [NOW]);
    // the 10 groups with a job running under the default are no lanes
    expect(Number(rows[0]!.count)).toBe(GROUPS.length - 10);
    const most = await mostBuffers(8, walk, [NOW]);
    expect(most).toBeLessThan(GROUPS.length * 10);
  });
});
