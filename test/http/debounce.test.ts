/** Debounce: uniqueKey + debounce makes one job with the last args, decided by one insert statement. */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { holdingJobTable, type JobsApi, jobsApi, threeInstances, until } from './jobs-support.js';

const T0 = '2026-11-20T09:00:00.000Z';
const at = (ms: number) => new Date(Date.parse(T0) + ms).toISOString();

let tdb: TestDatabase;
let instances: JobsApi[];
/** An instance on a clock the tests move. */
let m: JobsApi;
const clock = new ManualClock(T0);

beforeAll(async () => {
  tdb = await createTestDatabase();
  instances = await threeInstances(tdb);
  m = await jobsApi({ db: tdb.connect(), instanceId: 'm', clock });
});
afterAll(async () => {
  for (const api of [...(instances ?? []), m]) await api?.stack.close();
  await tdb?.destroy();
});
beforeEach(async () => {
  clock.set(T0);
  await tdb.db.pool.query('DELETE FROM job');
});

const jobsOf = async (key: string) =>
  (await tdb.db.pool.query(`SELECT id::text, args, state FROM job WHERE coalesce(unique_key, debounce_key) = $1 ORDER BY id`, [key])).rows;

describe('debounce', () => {
  it('makes one job per key with the last args, whichever of 3 instances receives the submissions', async () => {
    const keys = Array.from({ length: 10 }, (_, k) => `doc:${k}`);
    const burst = await Promise.all(
      Array.from({ length: 300 }, (_, i) =>
        instances[i % 3]!.post('/jobs', { type: 'reindex', uniqueKey: keys[i % 10], debounce: '1h', args: { i } }),
      ),
    );
    expect(burst.map((r) => r.status).filter((s) => s !== 200 && s !== 201)).toEqual([]);
    // per key: one 201, then 200s naming the same job
    for (const key of keys) {
      const answers = burst.filter((r) => r.body.uniqueKey === key);
      expect(answers).toHaveLength(30);
      expect(answers.filter((r) => r.status === 201)).toHaveLength(1);
      expect(new Set(answers.map((r) => r.body.id)).size).toBe(1);
    }
    // a last submission per key, after the burst answered: its args are the job's
    await Promise.all(
      keys.map((key, k) => instances[k % 3]!.post('/jobs', { type: 'reindex', uniqueKey: key, debounce: '1h', args: { last: key } })),
    );
    const rows = (await tdb.db.pool.query(`SELECT debounce_key, args FROM job ORDER BY debounce_key`)).rows;
    expect(rows).toEqual(
      keys.map((key) => ({ debounce_key: key, args: { last: key } })).sort((x, y) => x.debounce_key.localeCompare(y.debounce_key)),
    );
  });

  it('upserts the submissions of concurrent requests together, each key once, answering each with its job', async () => {
    const debouncer = m.stack.services.jobs.debouncer!;
    const before = { ...debouncer.stats };
    let sent: Promise<{ status: number; body: any }>[] = [];
    await holdingJobTable(tdb.db, async () => {
      sent = Array.from({ length: 40 }, (_, i) =>
        m.post('/jobs', { type: 'reindex', uniqueKey: `k${i % 4}`, debounce: '1s', args: { i } }),
      );
      await until(() => debouncer.stats.items - before.items + debouncer.pending === 40, 'all 40 submissions at the debouncer');
    });
    const answers = await Promise.all(sent);
    // the statements blocked by the lock, then one for everything that queued behind them
    expect(debouncer.stats.statements - before.statements).toBeLessThanOrEqual(debouncer.options.maxInFlight + 1);
    const rows = (await tdb.db.pool.query(`SELECT id::text, debounce_key, args FROM job ORDER BY debounce_key`)).rows;
    expect(rows.map((r) => r.debounce_key)).toEqual(['k0', 'k1', 'k2', 'k3']);
    for (const [k, row] of rows.entries()) {
      const mine = answers.filter((_, i) => i % 4 === k);
      expect(mine.filter((r) => r.status === 201)).toHaveLength(1);
      expect(mine.filter((r) => r.status !== 201).every((r) => r.status === 200)).toBe(true);
      expect(new Set(mine.map((r) => r.body.id))).toEqual(new Set([row.id]));
      expect(row.args.i % 4).toBe(k);
    }
  });

  it('moves runAt to now + debounce, never past the first submission + debounceMax', async () => {
    const first = await m.post('/jobs', { type: 'reindex', uniqueKey: 'k', debounce: '2s', debounceMax: '5s', args: 1 });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ runAt: at(2_000), uniqueKey: 'k', args: 1 });
    clock.set(at(1_500));
    const second = await m.post('/jobs', { type: 'reindex', uniqueKey: 'k', debounce: '2s', debounceMax: '5s', args: 2 });
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({ id: first.body.id, runAt: at(3_500), args: 2, createdAt: T0 });
    clock.set(at(4_000));
    const third = await m.post('/jobs', { type: 'reindex', uniqueKey: 'k', debounce: '2s', debounceMax: '5s', args: 3 });
    expect(third.body).toMatchObject({ id: first.body.id, runAt: at(5_000), args: 3 });
    expect(await m.lease({ worker: 'w' })).toEqual([]);
    clock.set(at(5_000));
    expect((await m.lease({ worker: 'w' })).map((j) => j.args)).toEqual([3]);
  });

  it('never pushes runAt so late that the job would expire: at most startBy − debounce', async () => {
    const body = (args: number) => ({ type: 'reindex', uniqueKey: 'k', debounce: '2s', debounceMax: '1m', startBy: at(10_000), args });
    expect(await m.create(body(1))).toMatchObject({ runAt: at(2_000), startBy: at(10_000) });
    clock.set(at(7_000));
    // now + debounce would be 9 s, which leaves the workers 1 s: held at 10 s − 2 s
    expect(await m.create(body(2))).toMatchObject({ runAt: at(8_000), args: 2 });
    clock.set(at(8_500));
    // a submission after that moment moves it no later; the job keeps its first startBy
    expect(await m.create({ ...body(3), startBy: at(60_000) })).toMatchObject({ runAt: at(8_000), args: 3, startBy: at(10_000) });
    const [leased] = await m.lease({ worker: 'w' });
    expect(leased).toMatchObject({ args: 3 });
    expect((await jobsOf('k')).map((r) => r.state)).toEqual(['running']);
  });

  it('makes a job whose startBy is nearer than its debounce runnable at once', async () => {
    expect(await m.create({ type: 'reindex', uniqueKey: 'k', debounce: '5s', startBy: at(3_000), args: 1 })).toMatchObject({
      runAt: at(-2_000),
    });
    expect((await m.lease({ worker: 'w' })).map((j) => j.args)).toEqual([1]);
  });

  it('defaults debounceMax to 10 × debounce', async () => {
    const first = await m.create({ type: 'reindex', uniqueKey: 'k', debounce: '1s' });
    clock.set(at(9_500));
    expect(await m.create({ type: 'reindex', uniqueKey: 'k', debounce: '1s' })).toMatchObject({ id: first.id, runAt: at(10_000) });
  });

  it('makes a new job while the first runs, and a retry of the first does not collide with it', async () => {
    const first = await m.create({ type: 'reindex', uniqueKey: 'k', debounce: '1s', args: 1, maxAttempts: 3 });
    clock.set(at(1_000));
    const [l] = await m.lease({ worker: 'w' });
    expect(l).toMatchObject({ id: first.id, args: 1 });
    const second = await m.post('/jobs', { type: 'reindex', uniqueKey: 'k', debounce: '1s', args: 2 });
    expect(second.status).toBe(201);
    expect(second.body.id).not.toBe(first.id);
    const failed = await m.post(`/jobs/${first.id}/failed`, { leaseToken: l!.leaseToken, error: 'x', retryIn: '0s' });
    expect(failed.body).toMatchObject({ state: 'queued' });
    // the retried job holds the key no more: a submission goes to the second job
    expect(await m.create({ type: 'reindex', uniqueKey: 'k', debounce: '1s', args: 3 })).toMatchObject({ id: second.body.id, args: 3 });
    expect((await jobsOf('k')).map((r) => r.args)).toEqual([1, 3]);
  });

  it('is taken by POST /jobs/batch, two bodies of one key making one job', async () => {
    const res = await m.post('/jobs/batch', {
      jobs: [
        { type: 'reindex', uniqueKey: 'k', debounce: '1s', args: 1 },
        { type: 'plain' },
        { type: 'reindex', uniqueKey: 'k', debounce: '1s', args: 2 },
      ],
    });
    expect(res.status).toBe(201);
    expect(res.body.jobs[0].id).toBe(res.body.jobs[2].id);
    expect(res.body.jobs[1]).toMatchObject({ type: 'plain' });
    expect((await jobsOf('k')).map((r) => r.args)).toEqual([2]);
  });

  it.each([
    [{ debounce: '1s' }, 'debounce', 'uniqueKey'],
    [{ uniqueKey: 'k', debounceMax: '1s' }, 'debounceMax', 'needs a debounce'],
    [{ uniqueKey: 'k', debounce: '2s', debounceMax: '1s' }, 'debounceMax', 'at least'],
    [{ uniqueKey: 'k', debounce: '1s', runAt: T0 }, 'runAt', 'debounce'],
    [{ uniqueKey: 'k', debounce: '1s', uniqueFor: '1h' }, 'uniqueFor', 'debounce'],
    [{ uniqueKey: 'k', debounce: 'soon' }, 'debounce', ''],
  ])('answers 400 naming the field for %j, creating nothing', async (fields, field, words) => {
    const res = await m.post('/jobs', { type: 'reindex', ...fields });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toContain(field);
    expect(JSON.stringify(res.body)).toContain(words);
    const batch = await m.post('/jobs/batch', { jobs: [{ type: 'ok' }, { type: 'reindex', ...fields }] });
    expect(batch.status).toBe(400);
    expect(JSON.stringify(batch.body)).toContain(`/jobs/1/${field}`);
    expect((await tdb.db.pool.query('SELECT count(*)::int AS n FROM job')).rows[0].n).toBe(0);
  });
});

describe('debounce from SQL (jobclock_add_job options)', () => {
  it('debounces like POST /jobs, so a trigger in the user database can', async () => {
    const add = (args: unknown) =>
      tdb.db.pool
        .query(`SELECT jobclock_add_job('reindex', $1::jsonb, '{"uniqueKey": "doc:1", "debounce": "2s", "debounceMax": "10s"}') AS id`, [
          JSON.stringify(args),
        ])
        .then((r) => String(r.rows[0].id));
    const id = await add({ v: 1 });
    expect(await add({ v: 2 })).toBe(id);
    const many = await tdb.db.pool.query(`SELECT jobclock_add_jobs($1::jsonb) AS id`, [
      JSON.stringify([{ type: 'reindex', uniqueKey: 'doc:1', debounce: '2s', args: { v: 3 } }, { type: 'other' }]),
    ]);
    expect(String(many.rows[0].id)).toBe(id);
    const row = (
      await tdb.db.pool.query(`SELECT args, run_at > now() AS later, debounce_until - created_at AS max FROM job WHERE id = $1`, [id])
    ).rows[0];
    expect(row).toMatchObject({ args: { v: 3 }, later: true });
    const job = await m.get(`/jobs/${id}`);
    expect(job.body).toMatchObject({ uniqueKey: 'doc:1', args: { v: 3 } });
  });

  it('never pushes runAt past startBy − debounce', async () => {
    const add = (args: unknown) =>
      tdb.db.pool
        .query(
          `SELECT jobclock_add_job('reindex', $1::jsonb,
                    jsonb_build_object('uniqueKey', 'doc:2', 'debounce', '2s', 'startBy', to_jsonb(now() + interval '3 s'))) AS id`,
          [JSON.stringify(args)],
        )
        .then((r) => String(r.rows[0].id));
    const id = await add({ v: 1 });
    expect(await add({ v: 2 })).toBe(id);
    const row = (await tdb.db.pool.query(`SELECT args, start_by - run_at >= interval '2 s' AS margin FROM job WHERE id = $1`, [id]))
      .rows[0];
    expect(row).toEqual({ args: { v: 2 }, margin: true });
  });

  it.each([
    [`{"debounce": "2s"}`, 'debounce'],
    [`{"uniqueKey": "k", "debounceMax": "2s"}`, 'debounceMax'],
    [`{"uniqueKey": "k", "debounce": "soon"}`, 'debounce'],
    [`{"uniqueKey": "k", "debounce": "2s", "debounceMax": "soon"}`, 'debounceMax'],
    [`{"uniqueKey": "k", "debounce": "2s", "runAt": "2026-11-20T09:00:00Z"}`, 'runAt'],
  ])('refuses %s naming the field', async (options, column) => {
    await expect(tdb.db.pool.query(`SELECT jobclock_add_job('t', NULL, $1::jsonb)`, [options])).rejects.toMatchObject({
      code: '22023',
      column,
    });
  });
});
