/**
 * Leasing is when execution begins: the drop check of policy allow, lastRun, taskState. Periodic
 * tasks and their jobs are inserted by SQL, as the PeriodicScheduler would insert them. Nuntium's
 * four timelines, end to end through the scheduler, are in nuntium-timelines.test.ts.
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import { beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { type TestDatabase } from '../support/db.js';
import { insertTask, insertTaskJob, type JobsApi, jobsApi, taskRow } from './jobs-support.js';
import { useJobsApi } from '../support/fixture.js';

const T = Date.parse('2026-11-20T00:00:00.000Z');
/** Nuntium's clock: `t('01:35')` is 1 min 35 s after the start. */
const t = (mmss: string) => {
  const [m, s] = mmss.split(':').map(Number);
  return new Date(T + (m! * 60 + s!) * 1000);
};

let tdb: TestDatabase;
let api: JobsApi;
const clock = new ManualClock(T);
const logs: Record<string, unknown>[] = [];

useJobsApi({ clock }, (f) => {
  ({ tdb, api } = f);
  const sink = new Writable({
    write(chunk, _enc, done) {
      logs.push(JSON.parse(String(chunk)));
      done();
    },
  });
  api.stack.ctx.logger = pino({ level: 'info' }, sink);
});
beforeEach(async () => {
  clock.set(T);
  logs.length = 0;
  await tdb.db.pool.query('DELETE FROM job');
  await tdb.db.pool.query('DELETE FROM periodic_task');
});

const jobState = async (id: string) => (await api.get(`/jobs/${id}`)).body;
const lease = (type: string, limit = 1) => api.lease({ worker: 'nuntium', types: [type], limit });

describe('the drop check at lease time', () => {
  it('drops a job that would begin before lastRun + interval − tolerance, recording and logging why', async () => {
    await insertTask(tdb.db, { id: 'mail', lastRun: t('00:35') });
    const id = await insertTaskJob(tdb.db, { taskId: 'mail', runAt: t('01:00') });
    clock.set(t('01:20')); // 45 s after lastRun < 55 s
    expect((await api.post('/jobs/next', { worker: 'nuntium' })).status).toBe(204);
    const job = await jobState(id);
    expect(job).toMatchObject({ state: 'dropped', finishedAt: t('01:20').toISOString(), attempts: 0, worker: null });
    expect(job.error).toMatchObject({ kind: 'dropped', lastRun: t('00:35').toISOString(), interval: 60_000, tolerance: 5_000 });
    expect(job.error.message).toMatch(/earlier than lastRun .* \+ interval − tolerance = 2026-11-20T00:01:30.000Z/);
    expect((await taskRow(tdb.db, 'mail')).last_run).toEqual(t('00:35'));
    expect(logs).toContainEqual(expect.objectContaining({ level: 30, jobId: id, taskId: 'mail', msg: expect.stringMatching(/dropped/) }));
  });

  it('runs a job that begins at lastRun + interval − tolerance, and sets lastRun', async () => {
    await insertTask(tdb.db, { id: 'mail', lastRun: t('00:35') });
    const id = await insertTaskJob(tdb.db, { taskId: 'mail', runAt: t('01:00') });
    clock.set(t('01:30'));
    const [job] = await lease('task.mail');
    expect(job).toMatchObject({ id, state: 'running', periodicTaskId: 'mail', maxAttempts: 1 });
    expect((await taskRow(tdb.db, 'mail')).last_run).toEqual(t('01:30'));
  });

  it('runs the first job of a task that never ran', async () => {
    await insertTask(tdb.db, { id: 'fresh' });
    const id = await insertTaskJob(tdb.db, { taskId: 'fresh', runAt: t('00:00') });
    expect((await lease('task.fresh'))[0]?.id).toBe(id);
  });

  it('goes on to the next candidate after a drop, in the same request', async () => {
    await insertTask(tdb.db, { id: 'mail', lastRun: t('00:35') });
    const dropped = await insertTaskJob(tdb.db, { taskId: 'mail', runAt: t('00:40') });
    const plain = await api.create({ type: 'task.mail', runAt: t('00:50').toISOString() });
    clock.set(t('01:00'));
    const jobs = await lease('task.mail');
    expect(jobs.map((j) => j.id)).toEqual([plain.id]);
    expect((await jobState(dropped)).state).toBe('dropped');
  });

  it('lets only the first of two jobs of one task run when one claim takes both', async () => {
    await insertTask(tdb.db, { id: 'mail' });
    const first = await insertTaskJob(tdb.db, { taskId: 'mail', runAt: t('00:30') });
    const second = await insertTaskJob(tdb.db, { taskId: 'mail', runAt: t('01:30') });
    clock.set(t('01:35'));
    const jobs = await lease('task.mail', 10);
    expect(jobs.map((j) => j.id)).toEqual([first]);
    expect(await jobState(second)).toMatchObject({
      state: 'dropped',
      error: { message: expect.stringMatching(/same periodic task began at the same moment/) },
    });
  });

  it('sets lastRun for jobs of forbid and replace tasks too, and never drops them', async () => {
    await insertTask(tdb.db, { id: 'nightly', policy: 'forbid', lastRun: t('00:59') });
    const id = await insertTaskJob(tdb.db, { taskId: 'nightly', runAt: t('01:00'), intervalMs: null, toleranceMs: null });
    clock.set(t('01:00'));
    expect((await lease('task.nightly'))[0]?.id).toBe(id);
    expect((await taskRow(tdb.db, 'nightly')).last_run).toEqual(t('01:00'));
  });

  it('hands the state saved by a heartbeat or a finish to the next job of the task as taskState', async () => {
    await insertTask(tdb.db, { id: 'sync', state: { cursor: 1 } });
    await insertTaskJob(tdb.db, { taskId: 'sync', runAt: t('00:00'), intervalMs: null });
    const [first] = await lease('task.sync');
    expect(first!.taskState).toEqual({ cursor: 1 });
    await api.post(`/jobs/${first!.id}/heartbeat`, { leaseToken: first!.leaseToken, state: { cursor: 5 } });
    expect((await taskRow(tdb.db, 'sync')).state).toEqual({ cursor: 5 });
    await api.post(`/jobs/${first!.id}/finished`, { leaseToken: first!.leaseToken, state: { cursor: 9 } });
    await insertTaskJob(tdb.db, { taskId: 'sync', runAt: t('01:00'), intervalMs: null });
    clock.set(t('01:00'));
    const [second] = await lease('task.sync');
    expect(second!.taskState).toEqual({ cursor: 9 });
    // a plain job has none
    await api.create({ type: 'plain' });
    expect((await lease('plain'))[0]!.taskState).toBeNull();
  });

  it('saves state given with a batch report and leaves it alone when none is given', async () => {
    await insertTask(tdb.db, { id: 'sync', state: { keep: true } });
    await insertTaskJob(tdb.db, { taskId: 'sync', runAt: t('00:00'), intervalMs: null });
    const [job] = await lease('task.sync');
    await api.post(`/jobs/${job!.id}/heartbeat`, { leaseToken: job!.leaseToken });
    expect((await taskRow(tdb.db, 'sync')).state).toEqual({ keep: true });
    await api.post('/jobs/reports', {
      reports: [{ id: job!.id, leaseToken: job!.leaseToken, outcome: 'failed', error: 'x', state: { at: 3 } }],
    });
    expect((await taskRow(tdb.db, 'sync')).state).toEqual({ at: 3 });
  });

  it('lets only one of two instances claiming jobs of one task at the same moment run one', async () => {
    const other = await jobsApi({ db: tdb.connect(), clock, instanceId: 'second' });
    try {
      for (let round = 0; round < 10; round++) {
        const task = `race${round}`;
        await insertTask(tdb.db, { id: task });
        const a = await insertTaskJob(tdb.db, { taskId: task, runAt: t('00:00') });
        const b = await insertTaskJob(tdb.db, { taskId: task, runAt: t('00:01') });
        clock.set(t('00:02'));
        const [x, y] = await Promise.all([lease(`task.${task}`), other.lease({ worker: 'other', types: [`task.${task}`] })]);
        expect([...x!, ...y!]).toHaveLength(1);
        const states = [(await jobState(a)).state, (await jobState(b)).state].sort();
        expect(states).toEqual(['dropped', 'running']);
      }
    } finally {
      await other.stack.close();
    }
  });
});
