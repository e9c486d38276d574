/**
 * Periodic tasks that can be left alone (API.md): retries within a slot, the next-run-due drop,
 * catch-up windows, endAt, the run ledger and health — through the real server and database, the
 * PeriodicScheduler ticked with a controlled clock.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { LeaseReaper } from '../../src/scheduler/lease-reaper.js';
import { PeriodicScheduler } from '../../src/scheduler/periodic-scheduler.js';
import { createTestStack } from '../support/app.js';
import { type TestDatabase } from '../support/db.js';
import { useJobsApi } from '../support/fixture.js';
import type { JobsApi } from './jobs-support.js';

const T0 = Date.parse('2026-11-20T00:00:00.000Z');
const MIN = 60_000;
const HOUR = 60 * MIN;
const at = (ms: number) => new Date(T0 + ms);
const iso = (ms: number) => at(ms).toISOString();

let tdb: TestDatabase;
let api: JobsApi;
let scheduler: PeriodicScheduler;
const clock = new ManualClock(T0);

useJobsApi({ clock }, (f) => {
  ({ tdb, api } = f);
  scheduler = new PeriodicScheduler(api.stack.ctx);
});
beforeEach(async () => {
  clock.set(T0);
  await tdb.db.pool.query('DELETE FROM job');
  await tdb.db.pool.query('DELETE FROM periodic_task');
});

/** Moves the clock to `ms` after T0 and lets the scheduler see it. */
async function tickAt(ms: number) {
  clock.set(at(ms));
  return scheduler.tick(at(ms));
}

async function createTask(body: Record<string, unknown>) {
  const res = await api.post('/periodic-tasks', { task: 'nightly.report', schedule: 'every 1h', ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

const task = async (id: string) => (await api.get(`/periodic-tasks/${id}`)).body;

async function leaseOne(type = 'nightly.report') {
  const jobs = await api.lease({ worker: 'w1', types: [type] });
  expect(jobs).toHaveLength(1);
  return jobs[0]!;
}

async function fail(job: Record<string, any>, extra: Record<string, unknown> = {}) {
  const res = await api.post(`/jobs/${job.id}/failed`, { leaseToken: job.leaseToken, error: { message: 'boom' }, ...extra });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

async function finish(job: Record<string, any>) {
  const res = await api.post(`/jobs/${job.id}/finished`, { leaseToken: job.leaseToken });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

async function runs(id: string, query = '') {
  const res = await api.get(`/periodic-tasks/${id}/runs${query}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as { items: Record<string, any>[]; nextCursor: string | null };
}

/** Every entry of the ledger, page by page. */
async function allRuns(id: string, limit: number, extra = '') {
  const items: Record<string, any>[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 1000; i++) {
    const page = await runs(id, `?limit=${limit}${extra}${cursor ? `&cursor=${cursor}` : ''}`);
    items.push(...page.items);
    cursor = page.nextCursor;
    if (cursor === null) return items;
  }
  throw new Error('the ledger does not end');
}

describe('retries within a slot', () => {
  it('retries a failed run with the backoff or the worker’s retryIn, until it finishes', async () => {
    await createTask({ id: 'nightly' });
    const patched = await api.patch('/periodic-tasks/nightly', { maxAttempts: 3 });
    expect(patched.status).toBe(200);
    expect(patched.body.maxAttempts).toBe(3);
    await tickAt(HOUR);
    const first = await leaseOne();
    expect(first).toMatchObject({ maxAttempts: 3, attempts: 1 });
    expect((await fail(first, { retryIn: '1m' })).state).toBe('queued');
    clock.set(at(HOUR + MIN));
    const second = await leaseOne();
    expect(second).toMatchObject({ id: first.id, attempts: 2 });
    const requeued = await fail(second);
    expect(requeued.state).toBe('queued'); // the job backoff
    clock.set(new Date(requeued.runAt));
    const third = await leaseOne();
    expect(third.attempts).toBe(3);
    await finish(third);
    const t = await task('nightly');
    // a failure with attempts left is not an outcome: only the run's end counts
    expect(t.health).toEqual({ status: 'ok', lastSuccessAt: requeued.runAt, lastFailureAt: null, consecutiveFailures: 0 });
    expect((await runs('nightly')).items[0]).toMatchObject({ slot: iso(HOUR), outcome: 'finished', jobId: first.id, attempts: 3 });
  });

  it('drops a retry still queued when the next slot comes due (next-run-due), and forbid submits the new run', async () => {
    await createTask({ id: 'nightly', maxAttempts: 3 });
    await tickAt(HOUR);
    const first = await leaseOne();
    await fail(first, { retryIn: '2h' }); // would wait past the next slot
    const summary = await tickAt(2 * HOUR);
    expect(summary).toMatchObject({ submitted: 1, skipped: 0 });
    const dropped = (await api.get(`/jobs/${first.id}`)).body;
    expect(dropped).toMatchObject({ state: 'dropped', attempts: 1 });
    expect(dropped.error).toMatchObject({ reason: 'next-run-due' });
    const events = (await api.get(`/jobs/${first.id}/events`)).body.items;
    expect(events.at(-1)).toMatchObject({ kind: 'dropped', detail: { reason: 'next-run-due' } });
    const next = await leaseOne();
    expect(next.id).not.toBe(first.id);
    expect(next.scheduledAt).toBe(iso(2 * HOUR));
    const ledger = await runs('nightly');
    expect(ledger.items.map((r) => [r.slot, r.outcome])).toEqual([
      [iso(2 * HOUR), 'pending'],
      [iso(HOUR), 'dropped'],
    ]);
    expect(ledger.items[1]!.detail).toMatchObject({ reason: 'next-run-due' });
  });

  it('leaves a retry alone while it runs: forbid skips the slot, naming the job', async () => {
    await createTask({ id: 'nightly', maxAttempts: 3 });
    await tickAt(HOUR);
    const first = await leaseOne();
    await fail(first, { retryIn: '0s' });
    const again = await leaseOne(); // the retry is running when the next slot comes
    expect(await tickAt(2 * HOUR)).toMatchObject({ submitted: 0, skipped: 1 });
    expect((await api.get(`/jobs/${again.id}`)).body.state).toBe('running');
    expect((await runs('nightly')).items[0]).toMatchObject({ slot: iso(2 * HOUR), outcome: 'skipped', detail: { blockedBy: first.id } });
  });
});

describe('catch-up window and endAt', () => {
  it('after a 6-hour outage, slots older than the window are missed whatever the misfire policy (a second instance started late)', async () => {
    for (const [id, misfirePolicy] of [
      ['coalesced', 'coalesce'],
      ['caught-up', 'catch-up'],
    ] as const) {
      await createTask({ id, misfirePolicy, concurrencyPolicy: 'allow', catchUpWindow: '1h' });
    }
    await tickAt(HOUR); // the first instance submits slot 1 of both, then goes down
    // a second instance starts at 7h10m: slots 2..7 are due; only slot 7 (10 min old) is inside the window
    const lateClock = new ManualClock(at(7 * HOUR + 10 * MIN));
    const late = await createTestStack({ db: tdb.db, clock: lateClock, instanceId: 'late', listen: false });
    try {
      const summary = await new PeriodicScheduler(late.ctx).tick(lateClock.now());
      expect(summary).toMatchObject({ taken: 2, submitted: 2 });
    } finally {
      await late.close();
    }
    clock.set(at(7 * HOUR + 10 * MIN));
    for (const id of ['coalesced', 'caught-up']) {
      const jobs = (await api.get(`/jobs?periodicTaskId=${id}`)).body.items.map((j: { scheduledAt: string }) => j.scheduledAt).sort();
      expect(jobs).toEqual([iso(HOUR), iso(7 * HOUR)]);
      const ledger = await allRuns(id, 3);
      expect(ledger.map((r) => [r.slot, r.outcome])).toEqual([
        [iso(7 * HOUR), 'pending'],
        ...[6, 5, 4, 3, 2].map((h) => [iso(h * HOUR), 'missed']),
        [iso(HOUR), 'pending'],
      ]);
    }
  });

  it('endAt: no slot at or after it, nextRun null once past, the task stays', async () => {
    await createTask({ id: 'campaign', endAt: iso(3 * HOUR) });
    await tickAt(HOUR);
    await finish(await leaseOne());
    await tickAt(2 * HOUR);
    await finish(await leaseOne());
    expect((await task('campaign')).nextRun).toBeNull();
    await tickAt(5 * HOUR);
    expect((await api.get('/jobs?periodicTaskId=campaign')).body.items).toHaveLength(2);
    const t = await task('campaign');
    expect(t).toMatchObject({ nextRun: null, endAt: iso(3 * HOUR), health: { status: 'ok' } });
    // moving the end later lets it go on from now (5h is a slot: due at once)
    clock.set(at(5 * HOUR + 1));
    const res = await api.patch('/periodic-tasks/campaign', { endAt: iso(24 * HOUR) });
    expect(res.body.nextRun).toBe(iso(6 * HOUR));
    expect((await api.patch('/periodic-tasks/campaign', { endAt: null })).body.nextRun).toBe(iso(6 * HOUR));
    expect((await api.patch('/periodic-tasks/campaign', { endAt: iso(6 * HOUR) })).body.nextRun).toBeNull();
  });

  it('a task created with an end before its first slot never runs', async () => {
    const t = await createTask({ id: 'never', endAt: iso(30 * MIN) });
    expect(t.nextRun).toBeNull();
  });
});

describe('the run ledger', () => {
  it('shows every slot exactly once with every outcome, and paging equals one page', async () => {
    await createTask({ id: 'ledger', schedule: 'every 10m', misfirePolicy: 'coalesce', timebox: '30m' });
    await tickAt(10 * MIN); // slot 1: finished
    await finish(await leaseOne());
    await tickAt(20 * MIN); // slot 2: failed
    await fail(await leaseOne());
    await tickAt(30 * MIN); // slot 3: cancelled
    const third = (await api.get('/jobs?periodicTaskId=ledger&state=queued')).body.items[0];
    expect((await api.post(`/jobs/${third.id}/cancel`, {})).status).toBe(200);
    await tickAt(40 * MIN); // slot 4: running ...
    const running = await leaseOne();
    await tickAt(50 * MIN); // ... so slot 5 is skipped under forbid
    clock.set(at(55 * MIN));
    const trig = await api.post('/periodic-tasks/ledger/trigger', {}); // forbid: 409 while slot 4 runs
    expect(trig.status).toBe(409);
    await finish(running);
    const triggered = (await api.post('/periodic-tasks/ledger/trigger', {})).body;
    await finish(await leaseOne());
    // down from 55 min to 1h35m: slot 6 is coalesced into one run, 7..9 missed
    await tickAt(95 * MIN);
    clock.set(at(100 * MIN)); // slot 10 is due, not taken yet
    const ledger = await allRuns('ledger', 1000);
    expect(ledger.map((r) => [r.slot, r.outcome, r.detail])).toEqual([
      [iso(100 * MIN), 'pending', { due: true }],
      [iso(90 * MIN), 'missed', {}],
      [iso(80 * MIN), 'missed', {}],
      [iso(70 * MIN), 'missed', {}],
      [iso(60 * MIN), 'pending', {}],
      [iso(55 * MIN), 'finished', { trigger: true }],
      [iso(50 * MIN), 'skipped', { blockedBy: running.id }],
      [iso(40 * MIN), 'finished', {}],
      [iso(30 * MIN), 'cancelled', {}],
      [iso(20 * MIN), 'failed', { error: { message: 'boom' } }],
      [iso(10 * MIN), 'finished', {}],
    ]);
    expect(ledger.find((r) => r.detail.trigger)!.jobId).toBe(triggered.id);
    for (const limit of [1, 2, 3, 7]) expect(await allRuns('ledger', limit)).toEqual(ledger);
    // the list's recentRuns (the console's strips, read for a whole page at once) is the ledger's first page
    const listed = (await api.get('/periodic-tasks?runs=5')).body.items.find((t: { id: string }) => t.id === 'ledger');
    expect(listed.recentRuns).toEqual(ledger.slice(0, 5));
    expect((await api.get('/periodic-tasks?runs=101')).status).toBe(400);
    // from and to bound the slots (both inclusive)
    const window = await allRuns('ledger', 2, `&from=${iso(30 * MIN)}&to=${iso(80 * MIN)}`);
    expect(window.map((r) => r.slot)).toEqual(ledger.slice(2, 9).map((r) => r.slot));
  });

  it('pages two months of an every-minute task in constant work per page (a year: bench/)', async () => {
    await createTask({ id: 'minutely', schedule: 'every 1m', concurrencyPolicy: 'allow' });
    // 86,400 finished jobs, written as the scheduler and workers would have left them
    await tdb.db.pool.query(
      `INSERT INTO job (type, periodic_task_id, scheduled_at, run_at, state, attempts, max_attempts, started_at, finished_at, created_at, updated_at)
       SELECT 'nightly.report', 'minutely', s, s, 'finished', 1, 1, s, s + interval '1 second', s, s
         FROM generate_series($1::timestamptz + interval '1 minute', $1::timestamptz + interval '60 days', interval '1 minute') s`,
      [iso(0)],
    );
    clock.set(at(60 * 24 * HOUR + 30_000));
    await tdb.db.pool.query(`UPDATE periodic_task SET nextrun = $1 WHERE id = 'minutely'`, [iso(60 * 24 * HOUR + MIN)]);
    await tdb.db.pool.query('ANALYZE job');
    const first = await runs('minutely', '?limit=100');
    expect(first.items).toHaveLength(100);
    expect(first.items[0]!.slot).toBe(iso(60 * 24 * HOUR));
    // the middle: one page, read through the index, not the history
    const mid = await runs('minutely', `?limit=100&to=${iso(30 * 24 * HOUR)}`);
    expect(mid.items.map((r) => r.outcome)).toEqual(Array(100).fill('finished'));
    expect(mid.items[99]!.slot).toBe(iso(30 * 24 * HOUR - 99 * MIN));
    const plan = await tdb.db.pool.query(
      `EXPLAIN (ANALYZE, FORMAT JSON) SELECT id FROM job WHERE periodic_task_id = 'minutely' AND scheduled_at >= $1 AND scheduled_at <= $2
        ORDER BY scheduled_at DESC LIMIT 102`,
      [iso(0), iso(30 * 24 * HOUR)],
    );
    const text = JSON.stringify(plan.rows[0]['QUERY PLAN']);
    expect(text).toContain('job_periodic_slot_key');
    expect(text).not.toContain('Seq Scan');
    expect(text).not.toContain('"Node Type":"Sort"');
  }, 120_000);
});

describe('health', () => {
  it('goes ok → failing (counting) → ok, and filters by it', async () => {
    await createTask({ id: 'flaky' });
    await createTask({ id: 'steady' });
    await createTask({ id: 'off', enabled: false });
    await tickAt(HOUR);
    const jobs = await api.lease({ worker: 'w', types: ['nightly.report'], limit: 10 });
    const byTask = new Map(jobs.map((j) => [j.periodicTaskId, j]));
    await fail(byTask.get('flaky')!);
    await finish(byTask.get('steady')!);
    expect((await task('flaky')).health).toEqual({
      status: 'failing',
      lastSuccessAt: null,
      lastFailureAt: iso(HOUR),
      consecutiveFailures: 1,
    });
    await tickAt(2 * HOUR);
    const again = await api.lease({ worker: 'w', types: ['nightly.report'], limit: 10 });
    clock.set(at(2 * HOUR + 5_000));
    await fail(again.find((j) => j.periodicTaskId === 'flaky')!);
    expect((await task('flaky')).health).toMatchObject({ status: 'failing', consecutiveFailures: 2, lastFailureAt: iso(2 * HOUR + 5_000) });
    const ids = async (h: string) => (await api.get(`/periodic-tasks?health=${h}`)).body.items.map((t: { id: string }) => t.id);
    expect(await ids('failing')).toEqual(['flaky']);
    expect(await ids('ok')).toEqual(['steady']);
    expect(await ids('disabled')).toEqual(['off']);
    expect(await ids('overdue')).toEqual([]);
    expect((await task('off')).health.status).toBe('disabled');
    await tickAt(3 * HOUR);
    const third = await api.lease({ worker: 'w', types: ['nightly.report'], limit: 10 });
    await finish(third.find((j) => j.periodicTaskId === 'flaky')!);
    expect((await task('flaky')).health).toEqual({
      status: 'ok',
      lastSuccessAt: iso(3 * HOUR),
      lastFailureAt: iso(2 * HOUR + 5_000),
      consecutiveFailures: 0,
    });
  });

  it('counts a run that timed out or was dropped as a failure, a cancelled one as nothing', async () => {
    await createTask({ id: 'slow', timebox: '1m' });
    await tickAt(HOUR);
    await leaseOne();
    // past deadline + grace: the reaper fails it with a timebox error
    clock.set(at(HOUR + 2 * MIN));
    await new LeaseReaper(api.stack.ctx).tick(at(HOUR + 2 * MIN));
    expect((await task('slow')).health).toMatchObject({ status: 'failing', consecutiveFailures: 1 });
    await tickAt(2 * HOUR);
    const queued = (await api.get('/jobs?periodicTaskId=slow&state=queued')).body.items[0];
    await api.post(`/jobs/${queued.id}/cancel`, {});
    expect((await task('slow')).health).toMatchObject({ status: 'failing', consecutiveFailures: 1 });
  });

  it('is overdue when no run finished for alertAfter after a slot came due, and ok again once one does', async () => {
    const created = await createTask({ id: 'watched', alertAfter: '2h' });
    expect(created.health.status).toBe('ok');
    await tickAt(HOUR); // slot 1 due; nobody works on it
    clock.set(at(3 * HOUR - 1));
    expect((await task('watched')).health.status).toBe('ok');
    clock.set(at(3 * HOUR));
    expect((await task('watched')).health.status).toBe('overdue');
    expect((await api.get('/periodic-tasks?health=overdue')).body.items.map((t: { id: string }) => t.id)).toEqual(['watched']);
    await finish(await leaseOne());
    expect((await task('watched')).health.status).toBe('ok');
    // the next slot after that success is 4h: overdue at 6h unless a run finishes
    await tickAt(4 * HOUR);
    clock.set(at(6 * HOUR - 1));
    expect((await task('watched')).health.status).toBe('ok');
    clock.set(at(6 * HOUR));
    expect((await task('watched')).health.status).toBe('overdue');
    // turning the switch off ends it
    expect((await api.patch('/periodic-tasks/watched', { alertAfter: null })).body.health.status).toBe('ok');
  });

  it('a failing task that is also overdue shows overdue (first match wins)', async () => {
    await createTask({ id: 'both', alertAfter: '30m' });
    await tickAt(HOUR);
    await fail(await leaseOne());
    clock.set(at(HOUR + 30 * MIN));
    expect((await task('both')).health).toMatchObject({ status: 'overdue', consecutiveFailures: 1 });
    expect((await api.get('/periodic-tasks?health=failing')).body.items).toEqual([]);
  });
});

describe('bad input names the field and changes nothing', () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ['maxAttempts 0', { maxAttempts: 0 }, '/maxAttempts'],
    ['maxAttempts 101', { maxAttempts: 101 }, '/maxAttempts'],
    ['maxAttempts 1.5', { maxAttempts: 1.5 }, '/maxAttempts'],
    ['catchUpWindow soon', { catchUpWindow: 'soon' }, '/catchUpWindow'],
    ['catchUpWindow 0s', { catchUpWindow: '0s' }, '/catchUpWindow'],
    ['endAt not a timestamp', { endAt: 'tomorrow' }, '/endAt'],
    ['alertAfter negative', { alertAfter: '-5m' }, '/alertAfter'],
    ['health is read-only', { health: { status: 'ok' } }, '/health'],
  ];
  for (const [name, body, path] of cases) {
    it(`POST and PATCH: ${name}`, async () => {
      const post = await api.post('/periodic-tasks', { id: 'bad', task: 't', schedule: 'every 1h', ...body });
      expect(post.status, JSON.stringify(post.body)).toBe(400);
      expect(post.body.errors.map((e: { path: string }) => e.path)).toContain(path);
      expect((await api.get('/periodic-tasks/bad')).status).toBe(404);
      await createTask({ id: 'good' });
      const before = await task('good');
      const patch = await api.patch('/periodic-tasks/good', body);
      expect(patch.status).toBe(400);
      expect(patch.body.errors.map((e: { path: string }) => e.path)).toContain(path);
      expect(await task('good')).toEqual(before);
      await tdb.db.pool.query('DELETE FROM periodic_task');
    });
  }

  it('a health value that does not exist, and from after to', async () => {
    const h = await api.get('/periodic-tasks?health=sick');
    expect(h.status).toBe(400);
    expect(h.body.errors[0].path).toBe('/health');
    await createTask({ id: 'x' });
    const r = await api.get(`/periodic-tasks/x/runs?from=${iso(HOUR)}&to=${iso(0)}`);
    expect(r.status).toBe(400);
    expect(r.body.errors[0].path).toBe('/from');
    expect((await api.get('/periodic-tasks/x/runs?cursor=nonsense')).status).toBe(400);
    expect((await api.get('/periodic-tasks/nope/runs')).status).toBe(404);
  });
});

describe('metrics', () => {
  /** The value of a sample line of GET /metrics, 0 when absent. */
  async function metric(name: string, labels: string): Promise<number> {
    const text = (await api.get('/metrics')).text;
    const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
    return line === undefined ? 0 : Number(line.split(' ').at(-1));
  }

  it('count each slot once as its outcome becomes final, and tasks per health status', async () => {
    const outcomes = ['finished', 'failed', 'dropped', 'cancelled', 'skipped', 'missed'] as const;
    const before = Object.fromEntries(
      await Promise.all(outcomes.map(async (o) => [o, await metric('jobclock_periodic_slots_total', `outcome="${o}"`)])),
    );
    await createTask({ id: 'm', schedule: 'every 10m', maxAttempts: 2, timebox: '30m' });
    await createTask({ id: 'late', task: 'other.type', schedule: 'every 10m', alertAfter: '5m', concurrencyPolicy: 'allow' });
    await tickAt(10 * MIN); // m: slot 1
    const jobs = await api.lease({ worker: 'w', types: ['nightly.report'], limit: 10 });
    await finish(jobs.find((j) => j.periodicTaskId === 'm')!); // finished: 1
    await tickAt(20 * MIN); // slot 2: fails with an attempt left (no outcome), then for good
    const second = (await api.lease({ worker: 'w', types: ['nightly.report'], limit: 10 })).find((j) => j.periodicTaskId === 'm')!;
    await fail(second, { retryIn: '0s' });
    await fail((await api.lease({ worker: 'w', types: ['nightly.report'], limit: 10 })).find((j) => j.periodicTaskId === 'm')!); // failed: 1
    await tickAt(30 * MIN); // slot 3: fails, its retry waits past the next slot ...
    const third = (await api.lease({ worker: 'w', types: ['nightly.report'], limit: 10 })).find((j) => j.periodicTaskId === 'm')!;
    await fail(third, { retryIn: '1h' });
    await tickAt(40 * MIN); // ... and is dropped at slot 4 (dropped: 1); slot 4's job is cancelled (cancelled: 1)
    const fourth = (await api.get('/jobs?periodicTaskId=m&state=queued')).body.items[0];
    await api.post(`/jobs/${fourth.id}/cancel`, {});
    await tickAt(50 * MIN); // slot 5, leased and left running ...
    await api.lease({ worker: 'w', types: ['nightly.report'], limit: 10 });
    await tickAt(60 * MIN); // ... so slot 6 is skipped (skipped: 1)
    await tickAt(100 * MIN); // down 60..100, slot 5 still running: slots 7..10 skipped too (skipped: 4)
    const after = Object.fromEntries(
      await Promise.all(outcomes.map(async (o) => [o, await metric('jobclock_periodic_slots_total', `outcome="${o}"`)])),
    );
    const delta = Object.fromEntries(outcomes.map((o) => [o, after[o] - before[o]]));
    // `late` (allow, coalesce) folded slots 8..10 into the run of slot 7 while down: missed 3
    expect(delta).toEqual({ finished: 1, failed: 1, dropped: 1, cancelled: 1, skipped: 5, missed: 3 });
    expect(await metric('jobclock_periodic_tasks', 'health="overdue"')).toBe(1); // late: no run finished
    expect(await metric('jobclock_periodic_tasks', 'health="failing"')).toBe(1); // m: its last run was dropped
    expect(await metric('jobclock_periodic_tasks', 'health="ok"')).toBe(0);
  });
});
