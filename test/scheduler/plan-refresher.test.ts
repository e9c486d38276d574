/**
 * The PlanRefresher (issue 30, found from outside): the worker protocol's connections keep one
 * generic plan per statement, made once; plans made while the job table was nearly empty and never
 * analyzed were a sequential scan of job (the report) and a sort of the whole queue (the lease) once
 * it had grown. The refresher has the connections plan again when the table outgrew their plans:
 * checked here on the plans a protocol connection uses, not on timings.
 */
import type pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { jobInsertMany, type JobInsertRow, jobLease, jobReport } from '../../src/repositories/jobs.js';
import { PlanRefresher } from '../../src/scheduler/plan-refresher.js';
import { testLogger } from '../support/app.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

let tdb: TestDatabase;
beforeAll(async () => {
  // 2 connections: 1 for the worker protocol (the one whose plans are read), 1 for the rest
  tdb = await createTestDatabase(2);
});
afterAll(async () => {
  await tdb?.destroy();
});

const ctx = (db = tdb.db) => ({
  db,
  clock: systemClock,
  logger: testLogger(),
  notifications: null as never,
  instanceId: 'plan-refresher-test',
  retentionMs: 7 * 24 * 3600 * 1000,
});

const row = (n: number): JobInsertRow => ({
  type: 'noop',
  group: 'default',
  args: { n },
  subject: null,
  submitter: null,
  priority: 0,
  runAt: new Date(Date.now() - 1_000),
  maxAttempts: 3,
  uniqueKey: null,
  timebox: null,
  traceparent: null,
  startBy: null,
});

const statistics = async () =>
  (await tdb.db.pool.query<{ reltuples: number }>(`SELECT reltuples::float8 AS reltuples FROM pg_class WHERE oid = 'job'::regclass`))
    .rows[0]!;

it('after a warm-up on the empty table and growth, has the protocol connection plan again, with the indexes', async () => {
  const db = tdb.db;
  // the statements as the protocol connection prepared them (name, text, values), captured on the way out
  const prepared = new Map<string, { text: string; values: unknown[] }>();
  const query = db.protocol.query.bind(db.protocol) as (q: unknown) => Promise<pg.QueryResult>;
  (db.protocol as unknown as { query: (q: { name: string; text: string; values: unknown[] }) => Promise<pg.QueryResult> }).query = (q) => {
    prepared.set(q.name, { text: q.text, values: q.values });
    return query(q);
  };
  expect((await statistics()).reltuples).toBe(-1); // a fresh database: never analyzed
  // as where autovacuum is off, or has not come yet (it waits for 50,000 changes); set first, as
  // the change of a table's options has every connection plan its statements again
  await db.pool.query(`ALTER TABLE job SET (autovacuum_enabled = false)`);
  const refresher = new PlanRefresher(ctx(), { minPages: 128 });
  expect(await refresher.tick()).toBe(false); // its first look: the size the plans are made for

  // warm-up on the empty table: the protocol connection prepares and plans the lease and the report
  const slots = Array.from({ length: 100 }, () => ({ worker: 'w', leaseMs: 30_000 }));
  for (let k = 0; k < 3; k++) {
    await jobInsertMany(
      db,
      Array.from({ length: 100 }, (_, i) => row(i)),
      new Date(),
    );
    const r = await jobLease(db, { now: new Date(), slots });
    const reports = r.leased.map((j) => ({ id: j.id, leaseToken: j.leaseToken, outcome: 'finished' as const, jitter: 1 }));
    expect(await jobReport(db, reports, new Date())).toHaveLength(100);
  }
  const lease = [...prepared.entries()].find(([, s]) => s.text.includes('jobclock_lanes'))!;
  const report = [...prepared.entries()].find(([, s]) => s.text.includes('used_token'))!;
  expect(lease && report).toBeTruthy();

  // growth: a history and a queue, never analyzed
  await db.pool.query(
    `INSERT INTO job (type, args, run_at, state, attempts, finished_at)
     SELECT 'history', '{}', now() - interval '1 hour', 'finished', 1, now() - interval '1 minute' FROM generate_series(1, 20000)`,
  );
  await db.pool.query(
    `INSERT INTO job (type, args, run_at) SELECT 'noop', '{}', now() - interval '1 second' FROM generate_series(1, 10000)`,
  );

  /** The plan the protocol connection runs `statement` with (its generic plan: EXPLAIN EXECUTE, not run). */
  const plan = async ([name, st]: [string, { text: string; values: unknown[] }]) => {
    const c = await db.protocol.connect();
    try {
      const literal = (v: unknown): string =>
        v === null || v === undefined
          ? 'NULL'
          : v instanceof Date
            ? c.escapeLiteral(v.toISOString())
            : typeof v === 'number'
              ? String(v)
              : Array.isArray(v)
                ? c.escapeLiteral(`{${v.map((x) => (x === null ? 'NULL' : `"${String(x).replace(/[\\"]/g, '\\$&')}"`)).join(',')}}`)
                : c.escapeLiteral(typeof v === 'string' ? v : JSON.stringify(v));
      const { rows } = await c.query<{ 'QUERY PLAN': string }>(`EXPLAIN EXECUTE "${name}"(${st.values.map(literal).join(', ')})`);
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    } finally {
      c.release();
    }
  };
  // the premise: the plans made on the empty table are still in use
  expect(await plan(report)).toMatch(/Seq Scan on job j\b/);

  expect(await refresher.tick()).toBe(true);
  expect((await statistics()).reltuples).toBe(-1); // planned again without statistics: nothing analyzed

  // the report finds its jobs by primary key; the lease takes the lane's first jobs from the fairness index
  const reportPlan = await plan(report);
  expect(reportPlan).toMatch(/Index Scan using job_pkey on job j\b|Bitmap Index Scan on job_pkey\b/);
  expect(reportPlan).not.toMatch(/Seq Scan on job\b/);
  expect(await plan(lease)).toMatch(/Index Scan using job_fair_idx on job j\b/);

  // until the table grows by 4× again, once is enough
  expect(await refresher.tick()).toBe(false);
});

it('never replans below minPages, then once per growth by the factor', () => {
  let replans = 0;
  const refresher = new PlanRefresher({ ...ctx(), db: { ...tdb.db, replan: () => replans++ } });
  const looks = [0, 30, 127, 128, 300, 512, 513, 2_052, 2_053].map((pages) => refresher.look(pages));
  expect(looks).toEqual([false, false, false, true, false, false, true, false, true]);
  expect(replans).toBe(3);
});
