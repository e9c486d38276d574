/**
 * The SearchIndexBuilder (migration 0030): the final jobs of a partition still being filled have no
 * search row (a search finds them on job); once the job ids have passed it and few of its jobs are
 * open, the builder seals it, copies its rows in one statement once the transactions that may have
 * missed the seal have ended, and builds both GINs in bulk (CREATE INDEX CONCURRENTLY); a search
 * finds the same jobs before and after. One instance works on the partitions at a time.
 */
import { once } from 'node:events';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { jobSearch, jobSearchWork } from '../../src/repositories/jobs.js';
import { SearchIndexBuilder } from '../../src/scheduler/search-index-builder.js';
import { testLogger } from '../support/app.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { repartition } from '../support/search-partitions.js';

let tdb: TestDatabase;
beforeAll(async () => {
  tdb = await createTestDatabase(6);
  await repartition(tdb.db.pool, 100);
});
afterAll(async () => {
  await tdb?.destroy();
});

const q = async <T extends Record<string, unknown>>(text: string, values: unknown[] = []) =>
  (await tdb.db.pool.query<T>(text, values)).rows;
const ctx = (instanceId = 'builder-test') => ({
  db: tdb.db,
  clock: systemClock,
  logger: testLogger(),
  notifications: null as never,
  instanceId,
  retentionMs: 7 * 24 * 3600 * 1000,
});
const builder = (instanceId?: string, sealWaitMs?: number) =>
  new SearchIndexBuilder(ctx(instanceId), { searchPartitionWidth: 100, ...(sealWaitMs === undefined ? {} : { sealWaitMs }) });
const rowsOf = async (ids: number[]) =>
  Number((await q<{ n: string }>('SELECT count(*) AS n FROM job_search WHERE id = ANY ($1::bigint[])', [ids]))[0]!.n);

/** `n` jobs inserted in one statement in `state` (finished ones leave a search row); their ids. */
const jobs = async (n: number, state: 'finished' | 'queued', tag = 'b') =>
  (
    await q<{ id: string }>(
      `INSERT INTO job (type, args, subject, state, run_at, attempts, finished_at)
       SELECT 'build', jsonb_build_object('customer', $3::text || '-' || g), 'job ' || $3::text || '-' || g, $2::text, now(),
              CASE WHEN $2::text = 'finished' THEN 1 ELSE 0 END, CASE WHEN $2::text = 'finished' THEN now() END
         FROM generate_series(1, $1::int) g RETURNING id`,
      [n, state, tag],
    )
  ).map((r) => Number(r.id));
/** The GIN indexes of each range partition, by partition, valid ones only. */
const gins = async () =>
  Object.fromEntries(
    (
      await q<{ part: string; idx: string[] }>(
        `SELECT c.relname AS part, array_agg(ic.relname::text ORDER BY ic.relname) FILTER (WHERE a.amname = 'gin' AND i.indisvalid) AS idx
           FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid
           LEFT JOIN pg_index i ON i.indrelid = c.oid LEFT JOIN pg_class ic ON ic.oid = i.indexrelid LEFT JOIN pg_am a ON a.oid = ic.relam
          WHERE h.inhparent = 'job_search'::regclass AND c.relname <> 'job_search_default'
          GROUP BY c.relname`,
      )
    ).map((r) => [r.part, r.idx ?? []]),
  );
const partOf = (id: number) => `job_search_p${Math.floor(id / 100) * 100}`;
const found = async (text: string) => (await jobSearch(tdb.db, { q: text, limit: 50 })).jobs.map((j) => Number(j.id)).sort((a, b) => a - b);

it('builds both GINs of a partition the ids have passed, not of the one still being written, and finds the same jobs', async () => {
  const ids = await jobs(250, 'finished');
  const first = ids[0]!;
  const last = ids.at(-1)!;
  const before = await found('b-17');
  expect(before.length).toBe(11); // b-17 and b-170 … b-179
  // no search row was written as they ended: the search found them on job
  expect(await rowsOf(ids)).toBe(0);
  const step = await builder().tick();
  // every job of a passed partition has its row now, copied in one statement; the newest none
  const passed = ids.filter((id) => partOf(id) !== partOf(last));
  expect(await rowsOf(passed)).toBe(passed.length);
  expect(step.copied).toBe(passed.length);
  expect(await rowsOf(ids.filter((id) => partOf(id) === partOf(last)))).toBe(0);
  // a job of a sealed partition that ends from now on has its row written by the trigger
  await q(`UPDATE job SET state = 'queued', finished_at = NULL WHERE id = $1`, [first]);
  await q(`UPDATE job SET state = 'finished', finished_at = now(), subject = 'ended again' WHERE id = $1`, [first]);
  expect((await q<{ text: string }>('SELECT text FROM job_search WHERE id = $1', [first]))[0]!.text).toContain('ended again');
  const g = await gins();
  // every partition wholly below the last id given out has both, the last one has none
  for (let lo = Math.floor(first / 100) * 100; lo + 100 <= last + 1; lo += 100)
    expect(g[`job_search_p${lo}`]).toEqual([`job_search_p${lo}_args_gin`, `job_search_p${lo}_text_gin`]);
  expect(g[partOf(last)]).toEqual([]);
  expect(step.built.length).toBeGreaterThan(0);
  expect(await found('b-17')).toEqual(before);
  // nothing left to build
  expect((await builder().tick()).built).toEqual([]);
  // the plan reads the indexed partitions through their GIN, the newest one sequentially
  // (the partitions are tiny: sequential scans are what the planner would choose for them all)
  const c = await tdb.db.pool.connect();
  const plan = await (async () => {
    try {
      await c.query('BEGIN');
      await c.query('SET LOCAL enable_seqscan = off');
      const { rows } = await c.query<{ 'QUERY PLAN': string }>(`EXPLAIN SELECT id FROM job_search WHERE text ILIKE '%b-17%'`);
      await c.query('COMMIT');
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    } finally {
      c.release();
    }
  })();
  expect(plan).toContain(`${partOf(first)}_text_gin`);
  expect(plan).toMatch(new RegExp(`Seq Scan on ${partOf(last)}`));
});

it('waits while a passed partition still holds open jobs (a deep queue), and builds once they have ended', async () => {
  await builder().tick();
  const queued = await jobs(100, 'queued', 'q');
  await jobs(250, 'finished', 'after');
  await builder().tick();
  const g = await gins();
  // each partition holding one of the queued jobs (below the threshold of a hundredth of its width)
  // stays unindexed: their rows would all go into the GINs one by one
  const held = [...new Set(queued.map(partOf))];
  for (const p of held) expect(g[p], p).toEqual([]);
  expect(g[partOf(queued.at(-1)! + 120)]).toHaveLength(2);
  await q(`UPDATE job SET state = 'finished', attempts = 1, finished_at = now() WHERE id = ANY ($1::bigint[])`, [queued]);
  const step = await builder().tick();
  for (const p of held) expect(step.built).toContain(`${p}_text_gin`);
  expect((await found('q-42')).length).toBe(1);
});

it('copies the rows of a sealed partition only once every transaction running at the seal has ended', async () => {
  await builder().tick();
  const ids = await jobs(150, 'queued', 'race');
  // leased (running jobs do not hold a partition back: they end soon)
  await q(
    `UPDATE job SET state = 'running', attempts = 1, started_at = now(), lease_token = gen_random_uuid(), worker = 'w' WHERE id = ANY ($1::bigint[])`,
    [ids],
  );
  // a worker's report that began before the seal: it ends jobs of the partition without seeing it
  const other = await tdb.connect(1).pool.connect();
  let open = true;
  try {
    await other.query('BEGIN');
    await other.query(`UPDATE job SET state = 'finished', attempts = 1, finished_at = now() WHERE id = ANY ($1::bigint[])`, [ids]);
    await jobs(250, 'finished', 'race-after');
    const started = performance.now();
    const step = await builder(undefined, 300).tick();
    // sealed, but not copied: the report's transaction is still open
    expect(step.sealed).toContain(partOf(ids[0]!));
    expect(performance.now() - started).toBeGreaterThan(250);
    expect((await jobSearchWork(tdb.db)).find((p) => p.name === partOf(ids[0]!))).toMatchObject({ sealed: true, copied: false });
    await other.query('COMMIT');
    open = false;
  } finally {
    if (open) await other.query('ROLLBACK');
    other.release();
  }
  // its jobs are found on job meanwhile, and copied at the next step
  expect((await found('race-7')).length).toBe(11);
  await builder().tick();
  expect(await rowsOf(ids.filter((id) => partOf(id) !== partOf(ids.at(-1)! + 250)))).toBe(
    ids.filter((id) => partOf(id) !== partOf(ids.at(-1)! + 250)).length,
  );
  expect((await found('race-7')).length).toBe(11);
});

it('builds again an index whose concurrent build was cut short (left invalid)', async () => {
  await jobs(300, 'finished', 'cut');
  await builder().tick();
  const [part] = (await jobSearchWork(tdb.db)).filter((p) => p.indexes.length === 2);
  await q(`UPDATE pg_index SET indisvalid = false WHERE indexrelid = $1::regclass`, [`${part!.name}_text_gin`]);
  expect((await jobSearchWork(tdb.db)).find((p) => p.name === part!.name)!.invalid).toEqual([`${part!.name}_text_gin`]);
  const step = await builder().tick();
  expect(step.built).toEqual([`${part!.name}_text_gin`]);
  expect((await gins())[part!.name]).toEqual([`${part!.name}_args_gin`, `${part!.name}_text_gin`]);
});

it('lets one instance build at a time: another finds it busy and builds nothing; several at once build each index once', async () => {
  await jobs(300, 'finished', 'busy');
  const other = await tdb.connect(1).pool.connect();
  try {
    await other.query(`SELECT pg_advisory_lock(hashtext('jobclock_search_build'))`);
    expect((await builder().tick()).built).toEqual([]);
    await other.query(`SELECT pg_advisory_unlock(hashtext('jobclock_search_build'))`);
  } finally {
    other.release();
  }
  await jobs(300, 'finished', 'many');
  const steps = await Promise.all([1, 2, 3].map((i) => builder(`b-${i}`).tick()));
  const built = steps.flatMap((s) => s.built);
  expect(new Set(built).size).toBe(built.length);
  // whatever the first tick left (another was busy), the next one takes: then every passed partition has both
  await builder().tick();
  const g = await gins();
  for (const p of await jobSearchWork(tdb.db)) expect(g[p.name], p.name).toEqual([`${p.name}_args_gin`, `${p.name}_text_gin`]);
});

it('runs as a loop every interval, and stops', async () => {
  const b = new SearchIndexBuilder(ctx(), { searchPartitionWidth: 100, intervalMs: 20 });
  b.start();
  await once(b.events, 'step');
  await once(b.events, 'step');
  await b.stop();
});
