/**
 * job_search partitioned by id range (migration 0018): the partitions the upkeep creates ahead of
 * the job ids and drops behind them, the default partition that catches a row whose partition is
 * missing, and several instances keeping them at once.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { jobSearchUpkeep } from '../../src/repositories/jobs.js';
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

const q = async <T extends Record<string, unknown>>(text: string, values: unknown[] = []) =>
  (await tdb.db.pool.query<T>(text, values)).rows;
/** `n` finished jobs, inserted in one statement; their ids. */
const finished = async (n: number) =>
  (
    await q<{ id: string }>(
      `INSERT INTO job (type, args, subject, state, run_at, attempts, finished_at)
       SELECT 'p', jsonb_build_object('n', g), 'job ' || g, 'finished', now(), 1, now() FROM generate_series(1, $1::int) g RETURNING id`,
      [n],
    )
  ).map((r) => Number(r.id));
const inDefault = async () => Number((await q<{ n: string }>('SELECT count(*) AS n FROM job_search_default'))[0]!.n);
const upkeep = () => jobSearchUpkeep(tdb.db, 10);
/** Each range begins where the one before ends: no gap, no overlap. */
const contiguous = (parts: { lo: number; hi: number }[]) => parts.every((p, i) => i === 0 || p.lo === parts[i - 1]!.hi);

it('partitions job_search a million ids apiece ahead of the ids given out, each partition with the indexes of the table', async () => {
  expect(await searchPartitions(tdb.db.pool)).toEqual([
    { name: 'job_search_p0', lo: 0, hi: 1_000_000 },
    { name: 'job_search_p1000000', lo: 1_000_000, hi: 2_000_000 },
    { name: 'job_search_p2000000', lo: 2_000_000, hi: 3_000_000 },
  ]);
  const indexes = await q<{ indexdef: string }>(
    `SELECT indexdef FROM pg_indexes WHERE tablename = 'job_search_p1000000' ORDER BY indexname`,
  );
  expect(indexes.map((r) => r.indexdef.replace(/^CREATE (UNIQUE )?INDEX \S+ ON \S+ USING /, ''))).toEqual([
    "gin (args jsonb_path_ops) WITH (gin_pending_list_limit='512')",
    'btree (group_, id)',
    'btree (id)',
    'gin (text gin_trgm_ops)',
    'btree (type, id)',
    'btree (worker, id) WHERE (worker IS NOT NULL)',
  ]);
  const options = await q<{ relname: string; reloptions: string[] }>(
    `SELECT relname, reloptions FROM pg_class WHERE relname IN ('job_search_default', 'job_search_p0') ORDER BY relname`,
  );
  expect(options).toEqual([
    { relname: 'job_search_default', reloptions: ['autovacuum_vacuum_insert_threshold=-1'] },
    { relname: 'job_search_p0', reloptions: ['autovacuum_vacuum_insert_threshold=-1'] },
  ]);
  // the ids given out have partitions of the default width: nothing to do
  expect(await jobSearchUpkeep(tdb.db)).toEqual({ created: 0, dropped: 0 });
});

it('puts a final job whose partition is missing in the default partition, and moves it into the partition made for it', async () => {
  await repartition(tdb.db.pool, 10);
  const before = await searchPartitions(tdb.db.pool);
  const ids = await finished(45);
  const covered = before.at(-1)!.hi;
  expect(await inDefault()).toBe(ids.filter((id) => id >= covered).length);
  expect(await inDefault()).toBeGreaterThan(0);

  const made = await upkeep();
  expect(made.dropped).toBe(0);
  const after = await searchPartitions(tdb.db.pool);
  expect(after.length - before.length).toBe(made.created);
  expect(contiguous(after)).toBe(true);
  // two partitions past the last id given out
  expect(after.at(-1)!.hi).toBeGreaterThan(Math.max(...ids) + 10);
  expect(await inDefault()).toBe(0);
  // every row in the partition of its id, none lost
  const rows = await q<{ id: string; part: string }>(
    `SELECT id::text, tableoid::regclass::text AS part FROM job_search ORDER BY job_search.id`,
  );
  expect(rows.map((r) => Number(r.id))).toEqual(ids);
  for (const r of rows) {
    const p = after.find((x) => x.lo <= Number(r.id) && Number(r.id) < x.hi)!;
    expect(r.part).toBe(p.name);
  }
});

it('drops a partition once no job of its range is left, and keeps one that still holds an open job', async () => {
  const parts = await searchPartitions(tdb.db.pool);
  const [first, second] = parts;
  // the second range keeps one job, open
  const { rows } = await tdb.db.pool.query<{ id: string }>(`SELECT id FROM job WHERE id >= $1 AND id < $2 ORDER BY id LIMIT 1`, [
    second!.lo,
    second!.hi,
  ]);
  const open = rows[0]!.id;
  await q(`UPDATE job SET state = 'queued', finished_at = NULL, attempts = 0 WHERE id = $1`, [open]);
  await q(`DELETE FROM job WHERE id < $1 AND id <> $2`, [second!.hi, open]);
  expect(await upkeep()).toEqual({ created: 0, dropped: 1 });
  // the deleted jobs took their search rows with them, from whichever partition held them (the
  // open job keeps the row of the time it was finished: a search checks each match on the job row)
  const [counts] = await q<{ jobs: string; rows: string }>(
    `SELECT (SELECT count(*) FROM job) AS jobs, (SELECT count(*) FROM job_search) AS rows`,
  );
  expect(counts!.rows).toBe(counts!.jobs);
  expect((await searchPartitions(tdb.db.pool)).map((p) => p.name)).not.toContain(first!.name);
  expect((await searchPartitions(tdb.db.pool)).map((p) => p.name)).toContain(second!.name);

  await q(`DELETE FROM job WHERE id = $1`, [open]);
  expect(await upkeep()).toEqual({ created: 0, dropped: 1 });
  // a job of a dropped range that ends after all (its id given out before the drop) is kept in the default partition
  const late = await q<{ id: string }>(
    `INSERT INTO job (id, type, subject, state, run_at, finished_at) OVERRIDING SYSTEM VALUE VALUES ($1, 'late', 'a straggler', 'finished', now(), now()) RETURNING id`,
    [first!.lo + 1],
  );
  expect((await q<{ part: string }>(`SELECT tableoid::regclass::text AS part FROM job_search WHERE id = $1`, [late[0]!.id]))[0]!.part).toBe(
    'job_search_default',
  );
  await q(`DELETE FROM job WHERE type = 'late'`);
  expect(await inDefault()).toBe(0);
});

it('gives up dropping while job_search is in use, and drops at the next sweep', async () => {
  const parts = await searchPartitions(tdb.db.pool);
  const { rows } = await tdb.db.pool.query<{ id: string }>('SELECT min(id)::text AS id FROM job');
  await q(`DELETE FROM job WHERE id < $1`, [Number(rows[0]!.id) + 10]);
  // another instance's statement on job_search, still running
  const busy = await tdb.connect(2).pool.connect();
  try {
    await busy.query('BEGIN');
    await busy.query('LOCK TABLE job_search IN ROW EXCLUSIVE MODE');
    const started = performance.now();
    expect(await upkeep()).toEqual({ created: 0, dropped: 0 });
    expect(performance.now() - started).toBeLessThan(5_000);
  } finally {
    await busy.query('COMMIT');
    busy.release();
  }
  const dropped = (await upkeep()).dropped;
  expect(dropped).toBeGreaterThan(0);
  expect((await searchPartitions(tdb.db.pool)).length).toBe(parts.length - dropped);
});

it('widens new partitions on a long history, so that their number stays in the dozens', async () => {
  await finished(2_000);
  await upkeep();
  const parts = await searchPartitions(tdb.db.pool);
  expect(contiguous(parts)).toBe(true);
  expect(parts.every((p) => (p.hi - p.lo) % 10 === 0)).toBe(true);
  expect(Math.max(...parts.map((p) => p.hi - p.lo))).toBeGreaterThan(10);
  expect(parts.length).toBeLessThan(100);
});

it('does not widen the partitions for an old job still open, which has no search row', async () => {
  await q('DELETE FROM job');
  await upkeep();
  // an old id, due next year
  await q(`INSERT INTO job (id, type, run_at) OVERRIDING SYSTEM VALUE VALUES (1, 'next-year', now() + interval '1 year')`);
  const before = (await searchPartitions(tdb.db.pool)).length;
  const ids = await finished(40);
  await upkeep();
  const made = (await searchPartitions(tdb.db.pool)).slice(before);
  expect(made.length).toBeGreaterThan(0);
  // ids since the oldest final job span a few dozen: the minimum width; since the open job, thousands
  expect(Math.max(...ids) / 32).toBeGreaterThan(20);
  expect(made.map((p) => p.hi - p.lo)).toEqual(made.map(() => 10));
  await q(`DELETE FROM job WHERE type = 'next-year'`);
});

it("gives the caller's transaction its own lock_timeout back", async () => {
  await finished(30); // past the partitions made ahead: the upkeep creates some, under its own 100 ms
  const c = await tdb.connect(2).pool.connect();
  try {
    await c.query('BEGIN');
    await c.query(`SET LOCAL lock_timeout = '7s'`);
    const { rows } = await c.query<{ created: number }>('SELECT created FROM jobclock_search_upkeep(10)');
    expect(rows[0]!.created).toBeGreaterThan(0);
    expect((await c.query<{ lock_timeout: string }>('SHOW lock_timeout')).rows[0]!.lock_timeout).toBe('7s');
  } finally {
    await c.query('ROLLBACK');
    c.release();
  }
});

it('is kept by several instances at once while jobs end: no gap, no overlap, no row lost', async () => {
  const pools = [tdb.connect(2), tdb.connect(2), tdb.connect(2)];
  let stop = false;
  const keepers = pools.map(async (db) => {
    let n = 0;
    while (!stop) {
      await jobSearchUpkeep(db, 10);
      n++;
    }
    return n;
  });
  try {
    for (let i = 0; i < 20; i++) await finished(25);
  } finally {
    stop = true;
  }
  expect(Math.min(...(await Promise.all(keepers)))).toBeGreaterThan(0);
  await upkeep();
  const parts = await searchPartitions(tdb.db.pool);
  expect(contiguous(parts)).toBe(true);
  expect(await inDefault()).toBe(0);
  const [counts] = await q<{ jobs: string; rows: string }>(
    `SELECT (SELECT count(*) FROM job WHERE state = 'finished') AS jobs, (SELECT count(*) FROM job_search) AS rows`,
  );
  expect(counts!.rows).toBe(counts!.jobs);
});
