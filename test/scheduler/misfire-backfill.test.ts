/** Missed runs by misfirePolicy through the scheduler, and POST /periodic-tasks/{id}/backfill. */
import { beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { PeriodicScheduler } from '../../src/scheduler/periodic-scheduler.js';
import { bearer, createTestStack, TOKENS } from '../support/app.js';
import { type TestDatabase } from '../support/db.js';
import { type JobsApi } from '../http/jobs-support.js';
import { useJobsApi } from '../support/fixture.js';

const T0 = '2026-11-20T00:00:00.000Z';
const MIN = 60_000;
const clock = new ManualClock(T0);
const at = (ms: number) => new Date(Date.parse(T0) + ms);
const admin = bearer('admin');
let tdb: TestDatabase;
let api: JobsApi;

useJobsApi({ clock, tokens: TOKENS }, (f) => ({ tdb, api } = f));
beforeEach(async () => {
  clock.set(T0);
  await tdb.db.pool.query('DELETE FROM job');
  await tdb.db.pool.query('DELETE FROM periodic_task');
});

const slotsOf = async (taskId: string) =>
  (
    await tdb.db.pool.query<{ scheduled_at: Date; state: string }>(
      'SELECT scheduled_at, state FROM job WHERE periodic_task_id = $1 ORDER BY scheduled_at',
      [taskId],
    )
  ).rows;
const createTask = async (body: Record<string, unknown>) => {
  const res = await api.post('/periodic-tasks', { task: 'work', schedule: 'every 1m', ...body }, admin);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
};

describe('misfirePolicy through the scheduler, after 1,000 missed slots', () => {
  it('coalesce (the default) submits one run, skip the latest if on time, catch-up the last catchUpLimit', async () => {
    expect((await createTask({ id: 'co', concurrencyPolicy: 'allow' })).misfirePolicy).toBe('coalesce');
    await createTask({ id: 'sk', concurrencyPolicy: 'allow', misfirePolicy: 'skip' });
    const cu = await createTask({ id: 'cu', concurrencyPolicy: 'allow', misfirePolicy: 'catch-up', catchUpLimit: 20 });
    expect(cu).toMatchObject({ misfirePolicy: 'catch-up', catchUpLimit: 20 });
    const scheduler = new PeriodicScheduler(api.stack.ctx);
    clock.set(at(1000 * MIN + 10_000)); // slots at 1..1000 min passed; the 1000th is 10 s late
    const tick = await scheduler.tick(clock.now());
    expect(tick.submitted).toBe(1 + 1 + 20);
    expect((await slotsOf('co')).map((r) => r.scheduled_at)).toEqual([at(MIN)]);
    expect((await slotsOf('sk')).map((r) => r.scheduled_at)).toEqual([at(1000 * MIN)]);
    expect((await slotsOf('cu')).map((r) => r.scheduled_at)).toEqual(Array.from({ length: 20 }, (_, i) => at((981 + i) * MIN)));
    // each advanced to the first slot after now
    for (const id of ['co', 'sk', 'cu'])
      expect((await api.get(`/periodic-tasks/${id}`, admin)).body.nextRun).toBe(at(1001 * MIN).toISOString());
  });

  it('skip submits nothing when the one due run is over a minute late (a 12-hour outage of a daily task)', async () => {
    await createTask({ id: 'daily', schedule: '*-*-* 09:00', misfirePolicy: 'skip' });
    clock.set('2026-11-20T21:00:00.000Z');
    const tick = await new PeriodicScheduler(api.stack.ctx).tick(clock.now());
    expect(tick).toMatchObject({ taken: 1, submitted: 0 });
    expect((await api.get('/periodic-tasks/daily', admin)).body.nextRun).toBe('2026-11-21T09:00:00.000Z');
  });

  it('refuses a bad misfirePolicy or catchUpLimit with a 400 naming it, and PATCH changes them', async () => {
    for (const [field, value] of [
      ['misfirePolicy', 'later'],
      ['catchUpLimit', 0],
      ['catchUpLimit', 1001],
      ['catchUpLimit', 1.5],
    ] as const) {
      const res = await api.post('/periodic-tasks', { id: 'bad', task: 'w', schedule: 'every 1m', [field]: value }, admin);
      expect(res.status, `${field}=${value}`).toBe(400);
      expect(res.body.errors[0].path).toBe(`/${field}`);
    }
    await createTask({ id: 'p' });
    const res = await api.patch('/periodic-tasks/p', { misfirePolicy: 'catch-up', catchUpLimit: 3 }, admin);
    expect(res.body).toMatchObject({ misfirePolicy: 'catch-up', catchUpLimit: 3 });
  });
});

describe('POST /periodic-tasks/{id}/backfill', () => {
  const backfill = (id: string, from: Date | string, to: Date | string, token = admin) =>
    api.post(`/periodic-tasks/${id}/backfill`, { from: new Date(from).toISOString(), to: new Date(to).toISOString() }, token);

  it('submits one job per slot in [from, to), each with its scheduledAt, and never a second one for a slot', async () => {
    await createTask({ id: 'h', schedule: 'every 1h', concurrencyPolicy: 'allow' });
    clock.set(at(10 * 3_600_000));
    const first = await backfill('h', at(0), at(5 * 3_600_000));
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect(first.body.jobs.map((j: { scheduledAt: string }) => j.scheduledAt)).toEqual(
      [1, 2, 3, 4].map((h) => at(h * 3_600_000).toISOString()),
    );
    expect(first.body.jobs[0]).toMatchObject({ periodicTaskId: 'h', state: 'queued', type: 'work' });
    const again = await backfill('h', at(0), at(6 * 3_600_000));
    expect(again.body.jobs.map((j: { scheduledAt: string }) => j.scheduledAt)).toEqual([at(5 * 3_600_000).toISOString()]);
    expect(again.body.existing).toHaveLength(4);
    expect(await slotsOf('h')).toHaveLength(5);
  });

  it('applies the concurrency policy per slot: forbid submits the oldest free slot, replace the newest and cancels the open job', async () => {
    await createTask({ id: 'f', schedule: 'every 1h' });
    await createTask({ id: 'r', schedule: 'every 1h', concurrencyPolicy: 'replace' });
    clock.set(at(10 * 3_600_000));
    const f = await backfill('f', at(0), at(4 * 3_600_000));
    expect(f.body.jobs.map((j: { scheduledAt: string }) => j.scheduledAt)).toEqual([at(3_600_000).toISOString()]);
    expect(f.body.skipped.map((s: { reason: string }) => s.reason)).toEqual(['one-open-job-at-a-time', 'one-open-job-at-a-time']);
    const busy = await backfill('f', at(4 * 3_600_000), at(6 * 3_600_000));
    expect(busy.body.jobs).toEqual([]);
    expect(busy.body.skipped.map((s: { reason: string }) => s.reason)).toEqual(['forbid-open-job', 'forbid-open-job']);
    await api.post('/periodic-tasks/r/trigger', {}, admin);
    const r = await backfill('r', at(0), at(4 * 3_600_000));
    expect(r.body.jobs.map((j: { scheduledAt: string }) => j.scheduledAt)).toEqual([at(3 * 3_600_000).toISOString()]);
    expect((await tdb.db.pool.query(`SELECT state FROM job WHERE periodic_task_id = 'r' AND scheduled_at IS NULL`)).rows).toEqual([
      { state: 'cancelled' },
    ]);
  });

  it('follows the schedule over a DST change in Europe/Berlin: the 02:30 that does not exist gets no job', async () => {
    await createTask({ id: 'dst', schedule: '30 2 * * *', timezone: 'Europe/Berlin', concurrencyPolicy: 'allow' });
    clock.set('2026-04-10T00:00:00.000Z');
    const res = await backfill('dst', '2026-03-27T00:00:00.000Z', '2026-03-31T00:00:00.000Z');
    expect(res.body.jobs.map((j: { scheduledAt: string }) => j.scheduledAt)).toEqual([
      '2026-03-27T01:30:00.000Z', // CET
      '2026-03-28T01:30:00.000Z',
      // 2026-03-29: clocks jump from 02:00 to 03:00; 02:30 does not happen
      '2026-03-30T00:30:00.000Z', // CEST
    ]);
  });

  it('gives each slot one job when it races the scheduler catching up on the same slots', async () => {
    await createTask({ id: 'race', concurrencyPolicy: 'allow', misfirePolicy: 'catch-up', catchUpLimit: 100 });
    clock.set(at(60 * MIN + 5_000));
    const other = await createTestStack({ db: tdb.connect(), clock, listen: false, instanceId: 'racer' });
    try {
      const scheduler = new PeriodicScheduler(other.ctx);
      const [tick, res] = await Promise.all([scheduler.tick(clock.now()), backfill('race', at(0), at(60 * MIN + 1))]);
      expect(res.status).toBe(201);
      const rows = await slotsOf('race');
      expect(new Set(rows.map((r) => r.scheduled_at.getTime())).size).toBe(rows.length); // no slot twice
      expect(rows).toHaveLength(60); // slots 1..60 min, each once, whoever submitted it
      expect(tick.submitted + res.body.jobs.length).toBe(60);
    } finally {
      await other.close();
    }
  });

  it('refuses a range that is empty, in the future or over 1000 slots, an unknown task, and non-admins', async () => {
    await createTask({ id: 'b' });
    clock.set(at(2000 * MIN));
    expect((await backfill('b', at(MIN), at(MIN))).status).toBe(400);
    expect((await backfill('b', at(0), at(3000 * MIN))).status).toBe(400);
    const tooMany = await backfill('b', at(0), at(1500 * MIN));
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.detail).toMatch(/more than 1000 slots/);
    expect((await backfill('nope', at(0), at(MIN))).status).toBe(404);
    expect((await backfill('b', at(0), at(10 * MIN), bearer('reader'))).status).toBe(403);
    const bad = await api.post('/periodic-tasks/b/backfill', { from: 'yesterday', to: at(MIN).toISOString() }, admin);
    expect(bad.status).toBe(400);
    expect(await slotsOf('b')).toEqual([]);
  });
});
