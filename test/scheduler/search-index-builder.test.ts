/**
 * The SearchIndexBuilder (migration 0030): job_search's partitions are written without their GIN
 * indexes; once the job ids have passed a partition and few of its jobs are still open, the builder
 * makes both GINs in bulk (CREATE INDEX CONCURRENTLY); a search by content finds the same jobs
 * before and after, reading an unindexed partition sequentially. One instance builds at a time.
 */
import { once } from 'node:events';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { jobSearch, jobSearchFilled } from '../../src/repositories/jobs.js';
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
const builder = (instanceId?: string) => new SearchIndexBuilder(ctx(instanceId), { searchPartitionWidth: 100 });

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
  const step = await builder().tick();
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

it('builds again an index whose concurrent build was cut short (left invalid)', async () => {
  await jobs(300, 'finished', 'cut');
  await builder().tick();
  const [part] = (await jobSearchFilled(tdb.db)).filter((p) => p.indexes.length === 2);
  await q(`UPDATE pg_index SET indisvalid = false WHERE indexrelid = $1::regclass`, [`${part!.name}_text_gin`]);
  expect((await jobSearchFilled(tdb.db)).find((p) => p.name === part!.name)!.invalid).toEqual([`${part!.name}_text_gin`]);
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
  for (const p of await jobSearchFilled(tdb.db)) expect(g[p.name], p.name).toEqual([`${p.name}_args_gin`, `${p.name}_text_gin`]);
});

it('runs as a loop every interval, and stops', async () => {
  const b = new SearchIndexBuilder(ctx(), { searchPartitionWidth: 100, intervalMs: 20 });
  b.start();
  await once(b.events, 'step');
  await once(b.events, 'step');
  await b.stop();
});
