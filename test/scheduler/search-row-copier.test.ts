/**
 * The SearchRowCopier (migration 0030): the final jobs of a slice of ids still being given out, or
 * still mostly queued, have no search row (a search finds them on job); once the ids have passed
 * the slice and few of its jobs are queued, the copier seals it, waits until the transactions that
 * may have missed the seal have ended, and copies its rows in one statement; a search finds the
 * same jobs before and after. One instance copies at a time.
 */
import { once } from 'node:events';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { jobSearch } from '../../src/repositories/jobs.js';
import { SearchRowCopier } from '../../src/scheduler/search-row-copier.js';
import { testLogger } from '../support/app.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

let tdb: TestDatabase;
beforeAll(async () => {
  tdb = await createTestDatabase(6);
});
afterAll(async () => {
  await tdb?.destroy();
});

const q = async <T extends Record<string, unknown>>(text: string, values: unknown[] = []) =>
  (await tdb.db.pool.query<T>(text, values)).rows;
const ctx = (instanceId = 'copier-test') => ({
  db: tdb.db,
  clock: systemClock,
  logger: testLogger(),
  notifications: null as never,
  instanceId,
  retentionMs: 7 * 24 * 3600 * 1000,
});
const copier = (sealWaitMs?: number, instanceId?: string) =>
  new SearchRowCopier(ctx(instanceId), { sliceWidth: 100, ...(sealWaitMs === undefined ? {} : { sealWaitMs }) });

/** `n` jobs inserted in one statement in `state` (their args and subject name `tag`); their ids. */
const jobs = async (n: number, state: 'finished' | 'queued', tag: string) =>
  (
    await q<{ id: string }>(
      `INSERT INTO job (type, args, subject, state, run_at, attempts, finished_at)
       SELECT 'copy', jsonb_build_object('customer', $3::text || '-' || g), 'job ' || $3::text || '-' || g, $2::text, now(),
              CASE WHEN $2::text = 'finished' THEN 1 ELSE 0 END, CASE WHEN $2::text = 'finished' THEN now() END
         FROM generate_series(1, $1::int) g RETURNING id`,
      [n, state, tag],
    )
  ).map((r) => Number(r.id));
const rowsOf = async (ids: number[]) =>
  Number((await q<{ n: string }>('SELECT count(*) AS n FROM job_search WHERE id = ANY ($1::bigint[])', [ids]))[0]!.n);
const lastId = async () =>
  Number((await q<{ id: string }>(`SELECT pg_sequence_last_value(pg_get_serial_sequence('job', 'id')) AS id`))[0]!.id);
const uncopied = async () =>
  (await q<{ lo: string; hi: string }>('SELECT lo::text, hi::text FROM job_search_sealed WHERE copied_at IS NULL')).length;
const found = async (text: string) => (await jobSearch(tdb.db, { q: text, limit: 50 })).jobs.map((j) => Number(j.id)).sort((a, b) => a - b);

it('copies the rows of each whole slice the ids have passed, in one statement; none of the newest', async () => {
  const ids = await jobs(250, 'finished', 'b');
  const before = await found('b-17');
  expect(before.length).toBe(11); // b-17 and b-170 … b-179
  // no search row was written as they ended: the search found them on job
  expect(await rowsOf(ids)).toBe(0);
  const step = await copier().tick();
  const { rows: sealed } = await tdb.db.pool.query<{ lo: string; hi: string }>('SELECT lo, hi FROM job_search_sealed ORDER BY lo');
  const top = Number(sealed.at(-1)!.hi);
  expect(top).toBeLessThanOrEqual((await lastId()) + 1);
  // every job below the last sealed slice has its row now, copied at once; those above none
  const below = ids.filter((id) => id < top);
  expect(below.length).toBeGreaterThan(100);
  expect(step.copied).toBe(below.length);
  expect(await rowsOf(below)).toBe(below.length);
  expect(await rowsOf(ids.filter((id) => id >= top))).toBe(0);
  expect(await found('b-17')).toEqual(before);
  // nothing left to do
  expect(await copier().tick()).toEqual({ sealed: 0, copied: 0 });
  // a job of a sealed slice that ends from now on has its row written by the trigger
  const first = ids[0]!;
  await q(`UPDATE job SET state = 'queued', finished_at = NULL WHERE id = $1`, [first]);
  expect(await rowsOf([first])).toBe(1); // the old row stays; a search checks each match on the job
  await q(`UPDATE job SET state = 'finished', finished_at = now(), subject = 'ended again' WHERE id = $1`, [first]);
  expect((await q<{ text: string }>('SELECT text FROM job_search WHERE id = $1', [first]))[0]!.text).toContain('ended again');
});

it('leaves a slice whose jobs are still queued (a deep queue), and copies it once they have ended', async () => {
  await copier().tick();
  const queued = await jobs(300, 'queued', 'q');
  await jobs(250, 'finished', 'after');
  await copier().tick();
  // the slices wholly made of queued jobs are not sealed: their rows would all be written one by one
  const { rows: covering } = await tdb.db.pool.query<{ n: string }>(
    `SELECT count(*) AS n FROM job_search_sealed WHERE lo < $2 AND hi > $1`,
    [queued[150]!, queued[150]! + 1],
  );
  expect(Number(covering[0]!.n)).toBe(0);
  await q(`UPDATE job SET state = 'finished', attempts = 1, finished_at = now() WHERE id = ANY ($1::bigint[])`, [queued]);
  // found on job before the copy, through job_search after it
  expect((await found('q-142')).length).toBe(1);
  const step = await copier().tick();
  expect(step.copied).toBeGreaterThanOrEqual(200);
  expect(await rowsOf(queued.slice(50, 250))).toBe(200);
  expect((await found('q-142')).length).toBe(1);
});

it('copies a sealed slice only once every transaction running at the seal has ended', async () => {
  await copier().tick();
  const ids = await jobs(150, 'queued', 'race');
  // leased (running jobs do not hold a slice back: they end soon)
  await q(
    `UPDATE job SET state = 'running', attempts = 1, started_at = now(), lease_token = gen_random_uuid(), worker = 'w' WHERE id = ANY ($1::bigint[])`,
    [ids],
  );
  // a worker's report that began before the seal: it ends jobs of the slice without seeing it
  const other = await tdb.connect(1).pool.connect();
  let open = true;
  try {
    await other.query('BEGIN');
    await other.query(`UPDATE job SET state = 'finished', finished_at = now() WHERE id = ANY ($1::bigint[])`, [ids]);
    await jobs(250, 'finished', 'race-after');
    const started = performance.now();
    const step = await copier(300).tick();
    // sealed, but not copied: the report's transaction is still open
    expect(step.sealed).toBeGreaterThan(0);
    expect(step.copied).toBe(0);
    expect(performance.now() - started).toBeGreaterThan(250);
    expect(await uncopied()).toBeGreaterThan(0);
    await other.query('COMMIT');
    open = false;
  } finally {
    if (open) await other.query('ROLLBACK');
    other.release();
  }
  // its jobs are found on job meanwhile, and copied at the next step
  expect((await found('race-7')).length).toBe(11);
  await copier().tick();
  expect(await uncopied()).toBe(0);
  const top = Number((await q<{ hi: string }>('SELECT max(hi) AS hi FROM job_search_sealed'))[0]!.hi);
  const sealedIds = ids.filter((id) => id < top);
  expect(sealedIds.length).toBeGreaterThan(0);
  expect(await rowsOf(sealedIds)).toBe(sealedIds.length);
  expect((await found('race-7')).length).toBe(11);
});

it('lets one instance copy at a time: another finds it busy; several at once copy each row once', async () => {
  await jobs(300, 'finished', 'busy');
  const other = await tdb.connect(1).pool.connect();
  try {
    await other.query(`SELECT pg_advisory_lock(hashtext('jobclock_search_build'))`);
    expect(await copier().tick()).toEqual({ sealed: 0, copied: 0 });
    await other.query(`SELECT pg_advisory_unlock(hashtext('jobclock_search_build'))`);
  } finally {
    other.release();
  }
  await jobs(300, 'finished', 'many');
  const steps = await Promise.all([1, 2, 3].map((i) => copier(undefined, `c-${i}`).tick()));
  await copier().tick();
  const copied = steps.reduce((n, s) => n + s.copied, 0);
  expect(copied).toBeGreaterThan(0);
  // one row per final job below the last sealed id, whoever copied it
  const top = Number((await q<{ hi: string }>('SELECT max(hi) AS hi FROM job_search_sealed'))[0]!.hi);
  const [c] = await q<{ jobs: string; rows: string }>(
    `SELECT (SELECT count(*) FROM job WHERE id < $1 AND state = 'finished') AS jobs, (SELECT count(*) FROM job_search WHERE id < $1) AS rows`,
    [top],
  );
  expect(c!.rows).toBe(c!.jobs);
});

it('runs as a loop every interval, and stops', async () => {
  const c = new SearchRowCopier(ctx(), { sliceWidth: 100, intervalMs: 20 });
  c.start();
  await once(c.events, 'step');
  await once(c.events, 'step');
  await c.stop();
});
