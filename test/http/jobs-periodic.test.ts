/**
 * Leasing is when execution begins: the drop check of policy allow, lastRun, taskState — and
 * Nuntium's four timelines (interval 1 min, scheduler ticking every 30 s, tolerance 5 s, timebox
 * interval/2), with a controlled clock and with the real clock at a compressed scale. Periodic tasks
 * and their jobs are inserted by SQL, as the PeriodicScheduler would insert them.
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { insertTask, insertTaskJob, type JobsApi, jobsApi, sleep, taskRow } from './jobs-support.js';

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

beforeAll(async () => {
  tdb = await createTestDatabase();
  api = await jobsApi({ db: tdb.db, clock });
  const sink = new Writable({
    write(chunk, _enc, done) {
      logs.push(JSON.parse(String(chunk)));
      done();
    },
  });
  api.stack.ctx.logger = pino({ level: 'info' }, sink);
});
afterAll(async () => {
  await api?.stack.close();
  await tdb?.destroy();
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
    expect(await jobState(second)).toMatchObject({ state: 'dropped', error: { message: expect.stringMatching(/same periodic task began at the same moment/) } });
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
    await api.post('/jobs/reports', { reports: [{ id: job!.id, leaseToken: job!.leaseToken, outcome: 'failed', error: 'x', state: { at: 3 } }] });
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

describe("Nuntium's timelines with a controlled clock", () => {
  async function allowTask(id: string) {
    await insertTask(tdb.db, { id, policy: 'allow' });
  }
  const submit = (taskId: string, mmss: string) => insertTaskJob(tdb.db, { taskId, runAt: t(mmss), intervalMs: 60_000, toleranceMs: 5_000, timeboxMs: 30_000 });
  const finish = async (job: Record<string, any>, mmss: string, state?: unknown) => {
    clock.set(t(mmss));
    const res = await api.post(`/jobs/${job.id}/finished`, { leaseToken: job.leaseToken, ...(state === undefined ? {} : { state }) });
    expect(res.status).toBe(200);
  };
  const begin = async (type: string, mmss: string) => {
    clock.set(t(mmss));
    return lease(type);
  };

  it('1: A2 enqueued 01:30 begins 01:32 and runs, since 57 s ≥ interval − tolerance', async () => {
    await allowTask('n1');
    const a1 = await submit('n1', '00:30');
    const [j1] = await begin('task.n1', '00:35');
    expect(j1!.id).toBe(a1);
    expect((await taskRow(tdb.db, 'n1')).last_run).toEqual(t('00:35'));
    await finish(j1!, '00:45');
    const a2 = await submit('n1', '01:30');
    const [j2] = await begin('task.n1', '01:32');
    expect(j2!.id).toBe(a2);
    expect((await taskRow(tdb.db, 'n1')).last_run).toEqual(t('01:32'));
  });

  it('2: in a congested queue A1 begins 01:35, and A2 begins 02:37 and runs', async () => {
    await allowTask('n2');
    const a1 = await submit('n2', '00:30');
    const a2 = await submit('n2', '01:30');
    const [j1] = await begin('task.n2', '01:35');
    expect(j1!.id).toBe(a1);
    await finish(j1!, '01:38');
    await submit('n2', '02:30');
    const [j2] = await begin('task.n2', '02:37');
    expect(j2!.id).toBe(a2);
    expect((await taskRow(tdb.db, 'n2')).last_run).toEqual(t('02:37'));
  });

  it('3: A2 begins 02:03 and is dropped; A3 enqueued 02:30 begins 02:56 and runs', async () => {
    await allowTask('n3');
    const a1 = await submit('n3', '00:30');
    const a2 = await submit('n3', '01:30');
    const [j1] = await begin('task.n3', '01:35');
    expect(j1!.id).toBe(a1);
    await finish(j1!, '01:38');
    expect(await begin('task.n3', '02:03')).toEqual([]);
    expect(await jobState(a2)).toMatchObject({ state: 'dropped', error: { kind: 'dropped', lastRun: t('01:35').toISOString() } });
    expect(logs).toContainEqual(expect.objectContaining({ jobId: a2, taskId: 'n3' }));
    const a3 = await submit('n3', '02:30');
    const [j3] = await begin('task.n3', '02:56');
    expect(j3!.id).toBe(a3);
    expect((await taskRow(tdb.db, 'n3')).last_run).toEqual(t('02:56'));
  });

  it('4: A1 past its timebox is told to cancel at 01:05, saves its state, and A2 resumes from it at 01:32', async () => {
    await allowTask('n4');
    await submit('n4', '00:30');
    const [j1] = await begin('task.n4', '00:35');
    expect(j1!.deadline).toBe(t('01:05').toISOString());
    clock.set(t('01:04'));
    expect((await api.post(`/jobs/${j1!.id}/heartbeat`, { leaseToken: j1!.leaseToken })).body.cancel).toBe(false);
    clock.set(t('01:05'));
    const hb = await api.post(`/jobs/${j1!.id}/heartbeat`, { leaseToken: j1!.leaseToken, progress: { mails: 120 } });
    expect(hb.body).toMatchObject({ cancel: true, deadline: t('01:05').toISOString() });
    await finish(j1!, '01:06', { lastUid: 4711 }); // inside the grace of 3 s
    const a2 = await submit('n4', '01:30');
    const [j2] = await begin('task.n4', '01:32');
    expect(j2).toMatchObject({ id: a2, taskState: { lastUid: 4711 } });
  });
});

describe("Nuntium's timelines with the real clock, 1 minute compressed to 4.8 s", () => {
  const K = 80; // ms per Nuntium second
  let real: JobsApi;
  beforeAll(async () => {
    real = await jobsApi({ db: tdb.connect(), instanceId: 'real-clock' });
  });
  afterAll(async () => real?.stack.close());

  it('holds all four timelines, run side by side', { timeout: 60_000 }, async () => {
    const start = Date.now() + 200;
    const when = (mmss: string) => new Date(start + ((t(mmss).getTime() - T) / 1000) * K);
    const until = async (mmss: string) => {
      const wait = when(mmss).getTime() - Date.now();
      if (wait > 0) await sleep(wait);
    };
    const submit = async (task: string, mmss: string) => {
      await until(mmss);
      return insertTaskJob(tdb.db, { taskId: task, runAt: when(mmss), intervalMs: 60 * K, toleranceMs: 5 * K, timeboxMs: 30 * K });
    };
    const begin = async (task: string, mmss: string) => {
      await until(mmss);
      return real.lease({ worker: task, types: [`task.${task}`] });
    };
    const finish = async (job: Record<string, any>, mmss: string, state?: unknown) => {
      await until(mmss);
      const res = await real.post(`/jobs/${job.id}/finished`, { leaseToken: job.leaseToken, ...(state === undefined ? {} : { state }) });
      expect(res.status).toBe(200);
    };
    for (const id of ['r1', 'r2', 'r3', 'r4']) await insertTask(tdb.db, { id });

    const timeline1 = async () => {
      const a1 = await submit('r1', '00:30');
      const [j1] = await begin('r1', '00:35');
      expect(j1?.id).toBe(a1);
      await finish(j1!, '00:45');
      const a2 = await submit('r1', '01:30');
      const [j2] = await begin('r1', '01:32');
      expect(j2?.id).toBe(a2);
    };
    const congested = async (task: string, a2Begins: string) => {
      const a1 = await submit(task, '00:30');
      const a2 = await submit(task, '01:30');
      const [j1] = await begin(task, '01:35');
      expect(j1?.id).toBe(a1);
      await finish(j1!, '01:38');
      if (a2Begins === '02:37') {
        await submit(task, '02:30');
        const [j2] = await begin(task, '02:37');
        expect(j2?.id).toBe(a2);
      } else {
        expect(await begin(task, '02:03')).toEqual([]);
        expect((await real.get(`/jobs/${a2}`)).body.state).toBe('dropped');
        const a3 = await submit(task, '02:30');
        const [j3] = await begin(task, '02:56');
        expect(j3?.id).toBe(a3);
      }
    };
    const timeline4 = async () => {
      await submit('r4', '00:30');
      const [j1] = await begin('r4', '00:35');
      // a worker heartbeating every 20 ms is told to stop once the deadline (startedAt + 30 s) passed
      await until('01:04');
      let cancelledAt = 0;
      while (!cancelledAt) {
        const hb = await real.post(`/jobs/${j1!.id}/heartbeat`, { leaseToken: j1!.leaseToken });
        expect(hb.status).toBe(200);
        if (hb.body.cancel) cancelledAt = Date.now();
        else await sleep(20);
      }
      // never before the deadline; how soon after depends on how busy the machine is (the report
      // below must still land inside the grace, which the controlled-clock tests check exactly)
      expect(cancelledAt).toBeGreaterThanOrEqual(Date.parse(j1!.deadline));
      await finish(j1!, '01:06', { lastUid: 99 });
      const a2 = await submit('r4', '01:30');
      const [j2] = await begin('r4', '01:32');
      expect(j2).toMatchObject({ id: a2, taskState: { lastUid: 99 } });
    };
    await Promise.all([timeline1(), congested('r2', '02:37'), congested('r3', '02:03'), timeline4()]);
  });
});
