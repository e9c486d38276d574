/** The LeaseReaper (expired leases, deadlines past their grace) and the RetentionCleaner — driven by tick(now). */
import { once } from 'node:events';
import pino from 'pino';
import type { KyselyPlugin } from 'kysely';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { createDb } from '../../src/db/database.js';
import { jobFindOverdue, jobReap } from '../../src/repositories/jobs.js';
import { LeaseReaper } from '../../src/scheduler/lease-reaper.js';
import { RetentionCleaner } from '../../src/scheduler/retention-cleaner.js';
import { type TestDatabase } from '../support/db.js';
import { repartition, sealAll, searchPartitions } from '../support/search-partitions.js';
import { type JobsApi, jobsApi } from '../http/jobs-support.js';
import { sleep } from '../support/wait.js';
import { useJobsApi } from '../support/fixture.js';

const T0 = '2026-11-20T09:00:00.000Z';
const at = (ms: number) => new Date(Date.parse(T0) + ms);
const DAY = 86_400_000;

let tdb: TestDatabase;
let api: JobsApi;
let reaper: LeaseReaper;
const clock = new ManualClock(T0);

useJobsApi({ clock, retentionMs: DAY }, (f) => {
  ({ tdb, api } = f);
  reaper = new LeaseReaper(api.stack.ctx);
});
beforeEach(async () => {
  clock.set(T0);
  await tdb.db.pool.query('DELETE FROM job');
});

const jobOf = async (id: string) => (await api.get(`/jobs/${id}`)).body;

describe('expired leases', () => {
  it("brings a killed worker's jobs back once their lease has expired", async () => {
    await api.post('/jobs/batch', { jobs: [{ type: 't' }, { type: 't' }, { type: 't' }] });
    const leased = await api.lease({ worker: 'doomed', limit: 3, lease: '10s' });
    expect(leased).toHaveLength(3);
    // the worker is killed: no heartbeat, no report
    expect(await reaper.tick(at(10_000))).toMatchObject({ requeued: 0, failed: 0, timedOut: 0 });
    expect(await reaper.tick(at(10_001))).toMatchObject({ requeued: 3, failed: 0, timedOut: 0 });
    for (const j of leased) {
      expect(await jobOf(j.id)).toMatchObject({
        state: 'queued',
        attempts: 1,
        runAt: at(10_001).toISOString(),
        leaseExpiresAt: null,
        error: { kind: 'lease_expired', worker: 'doomed' },
      });
    }
    clock.set(at(10_001));
    const again = await api.lease({ worker: 'alive', limit: 3 });
    expect(again.map((j) => j.id).sort()).toEqual(leased.map((j) => j.id).sort());
    expect(again.every((j) => j.attempts === 2 && j.worker === 'alive')).toBe(true);
    const late = await api.post(`/jobs/${leased[0]!.id}/finished`, { leaseToken: leased[0]!.leaseToken });
    expect(late.status).toBe(409);
  });

  it('keeps a lease that heartbeats extend', async () => {
    await api.create({ type: 't' });
    const [job] = await api.lease({ worker: 'w', lease: '10s' });
    clock.set(at(8_000));
    await api.post(`/jobs/${job!.id}/heartbeat`, { leaseToken: job!.leaseToken });
    expect((await reaper.tick(at(12_000))).requeued).toBe(0);
    expect((await reaper.tick(at(18_001))).requeued).toBe(1);
  });

  it('fails a job whose lease expired on its last attempt', async () => {
    await api.create({ type: 't', maxAttempts: 1 });
    const [job] = await api.lease({ worker: 'w', lease: '10s' });
    expect(await reaper.tick(at(60_000))).toMatchObject({ requeued: 0, failed: 1 });
    expect(await jobOf(job!.id)).toMatchObject({ state: 'failed', finishedAt: at(60_000).toISOString(), error: { kind: 'lease_expired' } });
  });

  it('changes nothing when the worker reported between finding and reaping', async () => {
    await api.create({ type: 't' });
    const [job] = await api.lease({ worker: 'w', lease: '10s' });
    const overdue = await jobFindOverdue(tdb.db, at(11_000), 100);
    expect(overdue.map((o) => o.id)).toEqual([job!.id]);
    await api.post(`/jobs/${job!.id}/finished`, { leaseToken: job!.leaseToken });
    const changed = await jobReap(
      tdb.db,
      [
        {
          id: job!.id,
          leaseToken: job!.leaseToken,
          state: 'queued',
          runAt: at(11_000),
          error: { kind: 'lease_expired', message: 'x', at: '' },
        },
      ],
      at(11_000),
    );
    expect(changed).toEqual([]);
    expect((await jobOf(job!.id)).state).toBe('finished');
  });

  it('requeues each expired job once when two reapers tick at the same moment', async () => {
    await api.post('/jobs/batch', { jobs: Array.from({ length: 200 }, () => ({ type: 't' })) });
    await api.lease({ worker: 'w', limit: 100, lease: '5s' });
    await api.lease({ worker: 'w', limit: 100, lease: '5s' });
    const other = new LeaseReaper({ ...api.stack.ctx, db: tdb.connect() });
    const [x, y] = await Promise.all([reaper.tick(at(6_000)), other.tick(at(6_000))]);
    expect(x.requeued + y.requeued).toBe(200);
    const { rows } = await tdb.db.pool.query(`SELECT count(*) AS n FROM job WHERE state = 'queued' AND attempts = 1`);
    expect(Number(rows[0].n)).toBe(200);
  });
});

describe('what a tick costs', () => {
  it('an idle tick makes one statement, a read; one with work runs the statements of that work', async () => {
    const kinds: string[] = [];
    const counting: KyselyPlugin = {
      transformQuery: (a) => (kinds.push(a.node.kind), a.node),
      transformResult: async (a) => a.result,
    };
    const ctx = api.stack.ctx;
    const counted = new LeaseReaper({ ...ctx, db: { ...ctx.db, kysely: ctx.db.kysely.withPlugin(counting) } });
    const idle = { requeued: 0, failed: 0, timedOut: 0, expired: 0, reclaimed: 0 };
    expect(await counted.tick(at(0))).toEqual(idle);
    expect(kinds).toEqual(['RawNode']);
    await api.post('/jobs', { type: 't' });
    const [leased] = await api.lease({ worker: 'doomed', lease: '10s' });
    kinds.length = 0;
    expect(await counted.tick(at(10_001))).toEqual({ ...idle, requeued: 1 });
    expect(kinds.length).toBeGreaterThan(1);
    expect((await jobOf(leased!.id)).state).toBe('queued');
    kinds.length = 0;
    expect(await counted.tick(at(10_002))).toEqual(idle);
    expect(kinds).toHaveLength(1);
  });
});

describe('deadlines', () => {
  it('fails a job past its deadline and grace with a timebox error and does not retry it', async () => {
    await api.create({ type: 't', timebox: '10s', maxAttempts: 3 });
    const [job] = await api.lease({ worker: 'w', lease: '1m' });
    expect((await reaper.tick(at(11_000))).timedOut).toBe(0); // grace: max(10 % of 10 s, 1 s)
    expect((await reaper.tick(at(11_001))).timedOut).toBe(1);
    const failed = await jobOf(job!.id);
    expect(failed).toMatchObject({
      state: 'failed',
      attempts: 1,
      finishedAt: at(11_001).toISOString(),
      deadline: at(10_000).toISOString(),
    });
    expect(failed.error).toMatchObject({ kind: 'timebox', deadline: at(10_000).toISOString() });
    expect(failed.error.message).toMatch(/timebox of 10s/);
    clock.set(at(11_001));
    expect((await api.post(`/jobs/${job!.id}/heartbeat`, { leaseToken: job!.leaseToken })).status).toBe(409);
    expect(await api.lease({ worker: 'w' })).toEqual([]);
  });

  it('leaves a job alone that reports inside the grace', async () => {
    await api.create({ type: 't', timebox: '30s' });
    const [job] = await api.lease({ worker: 'w', lease: '1m' });
    clock.set(at(32_000));
    expect((await api.post(`/jobs/${job!.id}/finished`, { leaseToken: job!.leaseToken, state: 'saved' })).status).toBe(200);
    expect(await reaper.tick(at(40_000))).toMatchObject({ timedOut: 0, failed: 0, requeued: 0 });
    expect((await jobOf(job!.id)).state).toBe('finished');
  });

  it('waits for the grace even when the lease expires inside it', async () => {
    await api.create({ type: 't', timebox: '30s' });
    const [job] = await api.lease({ worker: 'w', lease: '31s' });
    expect(await reaper.tick(at(32_000))).toMatchObject({ requeued: 0, timedOut: 0 });
    expect(await reaper.tick(at(33_001))).toMatchObject({ requeued: 0, timedOut: 1 });
    expect((await jobOf(job!.id)).error.kind).toBe('timebox');
  });
});

describe('retention', () => {
  async function finishedJobs(n: number, finishedAt: Date, state = 'finished') {
    await tdb.db.pool.query(
      `INSERT INTO job (type, state, run_at, finished_at, created_at, updated_at)
       SELECT 'old', $2, $1, $1, $1, $1 FROM generate_series(1, $3::int)`,
      [finishedAt, state, n],
    );
  }
  const count = async () => Number((await tdb.db.pool.query('SELECT count(*) AS n FROM job')).rows[0].n);

  it('deletes final jobs older than the retention in batches, and leaves open and younger ones', async () => {
    const sweeper = new RetentionCleaner(api.stack.ctx, { batchSize: 1000 });
    await finishedJobs(2_000, at(-2 * DAY));
    await finishedJobs(300, at(-2 * DAY), 'failed');
    await finishedJobs(200, at(-2 * DAY), 'cancelled');
    await finishedJobs(10, at(-DAY + 120_000)); // younger than the retention
    await api.create({ type: 'open', runAt: at(-3 * DAY).toISOString() });
    expect(await sweeper.tick(at(0))).toBe(2_500);
    expect(await count()).toBe(11);
    await finishedJobs(5, at(-2 * DAY));
    expect(await sweeper.tick(at(60_000))).toBe(5);
    expect(await sweeper.tick(at(DAY + 120_000))).toBe(10);
    expect(await count()).toBe(1);
  });

  it('stops a sweep after maxBatches statements and takes the rest in the next one', async () => {
    const sweeper = new RetentionCleaner(api.stack.ctx, { batchSize: 100, maxBatches: 3 });
    await tdb.db.pool.query('DELETE FROM job');
    await finishedJobs(450, at(-2 * DAY));
    expect(await sweeper.tick(at(0))).toBe(300);
    expect(await sweeper.tick(at(0))).toBe(150);
  });

  it('takes a backlog in sweeps a moment apart, then sleeps the interval again', async () => {
    await tdb.db.pool.query('DELETE FROM job');
    await finishedJobs(250, at(-2 * DAY));
    const loop = new RetentionCleaner(api.stack.ctx, { everyMs: 60_000, batchSize: 50, maxBatches: 2, catchUpMs: 10 });
    const sleeps: number[] = [];
    loop.events.on('sleep', ({ ms }: { ms: number }) => sleeps.push(ms));
    loop.start();
    try {
      while (sleeps.length < 3) await sleep(5);
      // 100 + 100 deleted, each sweep stopping at maxBatches; then the last 50 and caught up
      expect(sleeps.slice(0, 3)).toEqual([10, 10, 60_000]);
      expect(await count()).toBe(0);
    } finally {
      await loop.stop();
    }
  });

  it('keeps job_search partitioned at each sweep: made ahead of the job ids, dropped once retention emptied them', async () => {
    await tdb.db.pool.query('DELETE FROM job');
    await repartition(tdb.db.pool, 10);
    await sealAll(tdb.db.pool); // the rows written as the jobs end (migration 0030)
    await finishedJobs(50, at(-2 * DAY));
    // the jobs went past the partitions made ahead: their search rows wait in the default partition
    expect(Number((await tdb.db.pool.query('SELECT count(*) AS n FROM job_search_default')).rows[0].n)).toBeGreaterThan(0);
    const sweeper = new RetentionCleaner(api.stack.ctx, { searchPartitionWidth: 10 });
    expect(await sweeper.tick(at(0))).toBe(50);
    const { rows } = await tdb.db.pool.query<{ last: string }>(
      `SELECT pg_sequence_last_value(pg_get_serial_sequence('job', 'id'))::text AS last`,
    );
    const parts = await searchPartitions(tdb.db.pool);
    // the emptied ranges are gone; what is left lies ahead of the last id given out
    expect(parts.length).toBeGreaterThan(0);
    expect(parts[0]!.hi).toBeGreaterThan(Number(rows[0]!.last));
    expect(parts.at(-1)!.hi).toBeGreaterThan(Number(rows[0]!.last) + 10);
    expect(Number((await tdb.db.pool.query('SELECT count(*) AS n FROM job_search')).rows[0].n)).toBe(0);
  });

  it('sweeps from its own loop, once per interval', async () => {
    await tdb.db.pool.query('DELETE FROM job');
    await finishedJobs(20, at(-2 * DAY));
    const loop = new RetentionCleaner(api.stack.ctx, { everyMs: 60_000 });
    const firstSleep = once(loop.events, 'sleep');
    loop.start();
    try {
      const [{ ms }] = await firstSleep;
      expect(ms).toBe(60_000);
      expect(await count()).toBe(0);
    } finally {
      await loop.stop();
    }
  });
});

describe('the loop', () => {
  it('makes a job whose lease expired leasable again within 5 s, waking a waiting worker', { timeout: 20_000 }, async () => {
    const live = await jobsApi({ db: tdb.connect(), instanceId: 'live' });
    const loop = new LeaseReaper(live.stack.ctx);
    loop.start();
    try {
      await live.create({ type: 'loop' });
      const [job] = await live.lease({ worker: 'dies', types: ['loop'], lease: '1s' });
      const expiry = Date.parse(job!.leaseExpiresAt);
      const res = await live.post('/jobs/next', { worker: 'next', types: ['loop'], wait: '10s' });
      expect(res.status).toBe(200);
      expect(res.body.jobs[0].id).toBe(job!.id);
      expect(Date.now() - expiry).toBeLessThan(5_000);
    } finally {
      await loop.stop();
      await live.stack.close();
    }
  });

  it('keeps ticking after a tick fails, logging it, and stops between ticks', async () => {
    const logger = pino({ level: 'silent' });
    const warn = vi.spyOn(logger, 'warn');
    const unreachable = createDb({ url: 'postgres://nobody:x@127.0.0.1:1/none' }); // every tick fails
    const down = new LeaseReaper({ ...api.stack.ctx, logger, db: unreachable }, { intervalMs: 20 });
    let failures = 0;
    const thirdFailure = new Promise<void>((resolve) => down.events.on('failed', () => ++failures === 3 && resolve()));
    down.start();
    await thirdFailure;
    expect(String(warn.mock.calls[0]![1])).toMatch(/lease reaper tick failed/);
    await down.stop();
    await unreachable.destroy();
    const after = warn.mock.calls.length;
    await sleep(100); // several intervals: a stopped loop ticks no more
    expect(warn.mock.calls.length).toBe(after);
  });

  it('requeues an expired lease from its loop, without a tick being called', async () => {
    const job = await api.create({ type: 'looped' });
    await api.lease({ worker: 'w', lease: '1s' });
    clock.advance(2_000);
    const ok = new LeaseReaper(api.stack.ctx, { intervalMs: 60_000 });
    const firstStep = once(ok.events, 'step');
    ok.start();
    try {
      await firstStep;
      expect((await jobOf(job.id)).state).toBe('queued');
    } finally {
      await ok.stop();
    }
  });
});
