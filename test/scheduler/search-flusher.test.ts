/**
 * The SearchIndexFlusher (migration 0020): it merges the pending lists of job_search's GIN indexes
 * in the background, so that no worker's report pays for the merge; one instance at a time, and as
 * the function's owner, whoever calls it.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { jobSearchFlush } from '../../src/repositories/jobs.js';
import { SearchIndexFlusher } from '../../src/scheduler/search-flusher.js';
import { systemClock } from '../../src/clock.js';
import { testLogger } from '../support/app.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { repartition, sealAll, searchPartitions } from '../support/search-partitions.js';

let tdb: TestDatabase;
beforeAll(async () => {
  tdb = await createTestDatabase(4);
  await sealAll(tdb.db.pool); // every job's row written as it ends
});
afterAll(async () => {
  await tdb?.destroy();
});

/** `n` jobs finished in one statement: each leaves a search row (text and args) in job_search. */
const finish = (n: number) =>
  tdb.db.pool.query(
    `INSERT INTO job (type, args, subject, state, run_at, attempts, finished_at)
     SELECT 'flush', jsonb_build_object('customer', 'c-' || g, 'note', md5(g::text)), 'job ' || g, 'finished', now(), 1, now()
       FROM generate_series(1, $1::int) g`,
    [n],
  );
const ctx = () => ({
  db: tdb.db,
  clock: systemClock,
  logger: testLogger(),
  notifications: null as never,
  instanceId: 'flusher-test',
  retentionMs: 7 * 24 * 3600 * 1000,
});

/** What is left in the pending lists of every GIN of job_search's partitions, merged now to see it (as the test's superuser). */
const leftPending = async () => {
  const { rows } = await tdb.db.pool.query<{ pages: number }>(
    `SELECT coalesce(sum(gin_clean_pending_list(i.indexrelid)), 0)::int AS pages
       FROM pg_inherits h JOIN pg_index i ON i.indrelid = h.inhrelid JOIN pg_class c ON c.oid = i.indexrelid
       JOIN pg_am a ON a.oid = c.relam AND a.amname = 'gin'
      WHERE h.inhparent = 'job_search'::regclass`,
  );
  return rows[0]!.pages;
};

it('merges the pending lists of every partition, the old ones too: the pages it merged, none the second time', async () => {
  expect(await jobSearchFlush(tdb.db)).toBe(0);
  // a job queued long ago, that ends after thousands of newer ones: its row goes to an old partition
  const { rows: old } = await tdb.db.pool.query<{ id: string }>(
    `INSERT INTO job (type, args, subject, state, run_at) VALUES ('flush', '{"customer":"c-old"}', 'waited', 'queued', now()) RETURNING id`,
  );
  await repartition(tdb.db.pool, 100);
  await finish(500);
  await tdb.db.pool.query('SELECT jobclock_search_upkeep(100)');
  await tdb.db.pool.query(
    `UPDATE job SET state = 'finished', args = (SELECT jsonb_object_agg('k' || g, md5(g::text)) FROM generate_series(1, 300) g),
            attempts = 1, finished_at = now() WHERE id = $1`,
    [old[0]!.id],
  );
  const parts = await searchPartitions(tdb.db.pool);
  expect(parts.length).toBeGreaterThan(3);
  expect(Number(old[0]!.id)).toBeLessThan(parts.at(-3)!.lo);

  expect(await jobSearchFlush(tdb.db)).toBeGreaterThan(0);
  expect(await leftPending()).toBe(0);
  expect(await jobSearchFlush(tdb.db)).toBe(0);
  // the rows are still found by text and by args once merged into the indexes, each on its own:
  // c-42 and c-420 … c-429 by text, c-42 alone by args
  const count = async (where: string) =>
    Number((await tdb.db.pool.query<{ n: string }>(`SELECT count(*) AS n FROM job_search WHERE ${where}`)).rows[0]!.n);
  expect(await count(`text LIKE '%c-42%'`)).toBe(11);
  expect(await count(`args @> '{"customer":"c-42"}'`)).toBe(1);
});

it('lets one instance merge at a time: a flush finding another at work returns at once, merging nothing', async () => {
  await finish(300);
  const otherDb = tdb.connect(2); // another instance's connection
  const other = await otherDb.pool.connect();
  try {
    await other.query('BEGIN');
    await other.query(`SELECT pg_advisory_xact_lock(hashtext('jobclock_search_flush'))`);
    const started = performance.now();
    expect(await jobSearchFlush(tdb.db)).toBe(0);
    expect(performance.now() - started).toBeLessThan(2_000);
    await other.query('COMMIT');
  } finally {
    other.release();
  }
  expect(await jobSearchFlush(tdb.db)).toBeGreaterThan(0);
});

it('merges as the owner of the indexes, so a role that does not own them may call it', async () => {
  await finish(300);
  const role = `jt_flush_${randomBytes(4).toString('hex')}`;
  await tdb.db.pool.query(`CREATE ROLE ${role}`);
  const c = await tdb.connect(2).pool.connect();
  try {
    await c.query('BEGIN');
    await c.query(`SET LOCAL ROLE ${role}`);
    // gin_clean_pending_list() itself asks for the owner
    const { rows: gin } = await c.query<{ idx: string }>(
      `SELECT i.indexrelid::regclass::text AS idx FROM pg_inherits h JOIN pg_index i ON i.indrelid = h.inhrelid
         JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam AND a.amname = 'gin'
        WHERE h.inhparent = 'job_search'::regclass LIMIT 1`,
    );
    await expect(c.query('SELECT gin_clean_pending_list($1::regclass)', [gin[0]!.idx])).rejects.toThrow(/must be owner/);
    await c.query('ROLLBACK');
    await c.query('BEGIN');
    await c.query(`SET LOCAL ROLE ${role}`);
    const { rows } = await c.query<{ pages: number }>('SELECT jobclock_search_flush() AS pages');
    expect(rows[0]!.pages).toBeGreaterThan(0);
    await c.query('COMMIT');
  } finally {
    c.release();
    await tdb.db.pool.query(`DROP ROLE ${role}`);
  }
});

it('runs as a loop every interval, and stops', async () => {
  await finish(300);
  const flusher = new SearchIndexFlusher(ctx(), { intervalMs: 20 });
  const stepped = once(flusher.events, 'step');
  flusher.start();
  await stepped;
  await flusher.stop();
  expect(await jobSearchFlush(tdb.db)).toBe(0);
});
