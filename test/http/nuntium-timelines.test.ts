import type { FastifyInstance } from 'fastify';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, systemClock } from '../../src/clock.js';
import { PeriodicScheduler } from '../../src/scheduler/periodic-scheduler.js';
import { createTestStack, type TestStack } from '../support/app.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

/**
 * Nuntium's four timelines (interval 1 min, scheduler ticking every 30 s, tolerance 5 s), over
 * HTTP: first with a controlled clock, exactly; then with the real clock at a compressed scale.
 */
const BASE = Date.parse('2026-11-20T00:00:00.000Z');
const at = (mmss: string) => {
  const [m, s] = mmss.split(':').map(Number);
  return new Date(BASE + (m! * 60 + s!) * 1000);
};

let tdb: TestDatabase;

beforeAll(async () => {
  tdb = await createTestDatabase(6);
});
afterAll(async () => {
  await tdb?.destroy();
});

interface Leased {
  id: string;
  leaseToken: string;
  deadline: string | null;
  taskState: unknown;
  periodicTaskId: string | null;
  startedAt: string;
}

class Timeline {
  private lastTick: number;
  constructor(
    readonly stack: TestStack,
    readonly clock: ManualClock,
    readonly scheduler: PeriodicScheduler,
    readonly type: string,
  ) {
    this.lastTick = clock.now().getTime();
  }

  get app(): FastifyInstance {
    return this.stack.app;
  }

  /** Moves the clock to `mmss`, ticking the scheduler at every 30 s boundary on the way. */
  async advanceTo(mmss: string) {
    const target = at(mmss).getTime();
    for (let t = Math.floor(this.lastTick / 30_000) * 30_000 + 30_000; t <= target; t += 30_000) {
      this.clock.set(t);
      await this.scheduler.tick(new Date(t));
      this.lastTick = t;
    }
    this.clock.set(target);
  }

  async createTask(id: string) {
    const res = await request(this.app.server)
      .post('/periodic-tasks')
      .send({
        id,
        task: this.type,
        schedule: 'every 1m',
        firstRunAt: at('00:30').toISOString(),
        tolerance: '5s',
        concurrencyPolicy: 'allow',
      });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.nextRun).toBe(at('00:30').toISOString());
    return res.body;
  }

  async lease(): Promise<Leased | null> {
    const res = await request(this.app.server)
      .post('/jobs/next')
      .send({ worker: 'w1', types: [this.type] });
    if (res.status === 204) return null;
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.jobs).toHaveLength(1);
    return res.body.jobs[0];
  }

  async finish(job: Leased, state?: unknown) {
    const res = await request(this.app.server)
      .post(`/jobs/${job.id}/finished`)
      .send({ leaseToken: job.leaseToken, ...(state === undefined ? {} : { state }) });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.state).toBe('finished');
  }

  async task(id: string) {
    return (await request(this.app.server).get(`/periodic-tasks/${id}`)).body;
  }

  async jobsOf(id: string) {
    const res = await request(this.app.server).get(`/jobs?periodicTaskId=${id}&limit=100`);
    return (res.body.items as { id: string; state: string; runAt: string; error: unknown }[]).sort((a, b) => Number(a.id) - Number(b.id));
  }
}

async function timeline(name: string): Promise<Timeline> {
  const clock = new ManualClock(BASE);
  const stack = await createTestStack({ db: tdb.db, clock, instanceId: `nuntium-${name}` });
  const scheduler = new PeriodicScheduler(stack.ctx);
  return new Timeline(stack, clock, scheduler, `nuntium.${name}`);
}

describe('Nuntium timelines with a controlled clock', () => {
  it('1: a run that begins 57 s after the previous one still runs (57 s ≥ interval − tolerance)', async () => {
    const t = await timeline('one');
    try {
      await t.createTask('n1');
      await t.advanceTo('00:30'); // A1 enqueued
      expect((await t.task('n1')).nextRun).toBe(at('01:30').toISOString());
      await t.advanceTo('00:35');
      const a1 = (await t.lease())!;
      expect((await t.task('n1')).lastRun).toBe(at('00:35').toISOString());
      await t.advanceTo('00:45');
      await t.finish(a1);
      await t.advanceTo('01:30'); // A2 enqueued
      expect((await t.task('n1')).nextRun).toBe(at('02:30').toISOString());
      await t.advanceTo('01:32');
      const a2 = await t.lease();
      expect(a2).not.toBeNull();
      expect((await t.task('n1')).lastRun).toBe(at('01:32').toISOString());
    } finally {
      await t.stack.close();
    }
  });

  it('2: in a congested queue, a late run still runs when it begins after lastRun + interval − tolerance', async () => {
    const t = await timeline('two');
    try {
      await t.createTask('n2');
      await t.advanceTo('01:30'); // A1 (00:30) and A2 (01:30) both queued
      expect((await t.jobsOf('n2')).map((j) => j.state)).toEqual(['queued', 'queued']);
      await t.advanceTo('01:35');
      const a1 = (await t.lease())!;
      const jobs = await t.jobsOf('n2');
      expect(a1.id).toBe(jobs[0]!.id);
      await t.advanceTo('01:38');
      await t.finish(a1);
      await t.advanceTo('02:30'); // A3 enqueued
      expect((await t.task('n2')).nextRun).toBe(at('03:30').toISOString());
      await t.advanceTo('02:37');
      const a2 = (await t.lease())!;
      expect(a2.id).toBe(jobs[1]!.id); // A2 runs: 02:37 ≥ 01:35 + 55 s
      expect((await t.task('n2')).lastRun).toBe(at('02:37').toISOString());
    } finally {
      await t.stack.close();
    }
  });

  it('3: a run that would begin before lastRun + interval − tolerance is dropped, and the next one runs', async () => {
    const t = await timeline('three');
    try {
      await t.createTask('n3');
      await t.advanceTo('01:35');
      const a1 = (await t.lease())!;
      await t.advanceTo('01:38');
      await t.finish(a1);
      await t.advanceTo('02:03');
      expect(await t.lease()).toBeNull(); // A2 dropped: 02:03 < 01:35 + 55 s
      const afterDrop = await t.jobsOf('n3');
      expect(afterDrop.map((j) => j.state)).toEqual(['finished', 'dropped']);
      expect(JSON.stringify(afterDrop[1]!.error)).toMatch(/dropped/i);
      expect((await t.task('n3')).lastRun).toBe(at('01:35').toISOString());
      await t.advanceTo('02:30'); // A3 enqueued
      await t.advanceTo('02:56');
      const a3 = (await t.lease())!;
      expect(a3.id).toBe((await t.jobsOf('n3'))[2]!.id);
      expect((await t.task('n3')).lastRun).toBe(at('02:56').toISOString());
    } finally {
      await t.stack.close();
    }
  });

  it('4: a run past its timebox is told to stop, saves its state, and the next run receives it', async () => {
    const t = await timeline('four');
    try {
      await t.createTask('n4');
      await t.advanceTo('00:35');
      const a1 = (await t.lease())!;
      expect(a1.deadline).toBe(at('01:05').toISOString()); // timebox = interval / 2
      await t.advanceTo('01:00');
      let hb = await request(t.app.server).post(`/jobs/${a1.id}/heartbeat`).send({ leaseToken: a1.leaseToken });
      expect(hb.status).toBe(200);
      expect(hb.body.cancel).toBe(false);
      await t.advanceTo('01:05');
      hb = await request(t.app.server).post(`/jobs/${a1.id}/heartbeat`).send({ leaseToken: a1.leaseToken });
      expect(hb.body.cancel).toBe(true);
      await t.advanceTo('01:06'); // inside the grace (10% of the timebox, at least 1 s)
      await t.finish(a1, { cursor: 42 });
      await t.advanceTo('01:32');
      const a2 = (await t.lease())!;
      expect(a2.taskState).toEqual({ cursor: 42 });
    } finally {
      await t.stack.close();
    }
  });
});

describe('Nuntium timelines with the real clock, one minute compressed to four seconds', () => {
  const SCALE = 4000 / 60_000; // 1 min → 4 s; tolerance 5 s → 333 ms

  it('runs timeline 1 and drops the early run of timeline 3', async () => {
    const stack = await createTestStack({ db: tdb.db, clock: systemClock, instanceId: 'nuntium-real' });
    const scheduler = new PeriodicScheduler(stack.ctx);
    const start = Math.ceil((Date.now() + 1500) / 1000) * 1000;
    const when = (mmss: string) => start + (at(mmss).getTime() - BASE) * SCALE;
    const sleepTo = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms - Date.now())));
    const sleepUntil = (mmss: string) => sleepTo(when(mmss));
    // Every step after a run began is timed from that run's startedAt as the server recorded it,
    // not from the timeline's start: on a loaded machine a lease may come late, and timed from the
    // start that lateness would eat the margin of timeline 1 (its second run begins 2 s, 133 ms
    // here, after lastRun + interval − tolerance). Timed from startedAt, lateness only moves the
    // later steps along with it; each later step can itself only come late, which is the side of
    // the drop check that each expects (a run must begin after the threshold; the dropped one has
    // 27 s, 1.8 s here, of room below it).
    const sleepAfter = (run: Leased, from: string, to: string) =>
      sleepTo(Date.parse(run.startedAt) + (at(to).getTime() - at(from).getTime()) * SCALE);
    const srv = stack.app.server;
    const lease = async (type: string, wait = '0s') => {
      const res = await request(srv)
        .post('/jobs/next')
        .send({ worker: 'real', types: [type], wait });
      return res.status === 204 ? null : (res.body.jobs[0] as Leased);
    };
    try {
      for (const [id, type] of [
        ['r1', 'real.one'],
        ['r3', 'real.three'],
      ] as const) {
        const res = await request(srv)
          .post('/periodic-tasks')
          .send({
            id,
            task: type,
            schedule: 'every 4s',
            firstRunAt: new Date(when('00:30')).toISOString(),
            tolerance: '333ms',
            concurrencyPolicy: 'allow',
          });
        expect(res.status, JSON.stringify(res.body)).toBe(201);
      }
      scheduler.start();

      // timeline 1: A1 begins 00:35, ends 00:45; A2 begins 01:32 and runs
      // timeline 3: A1 begins 01:35, ends 01:38; A2 begins 02:03 and is dropped; A3 begins 02:56 and runs
      // (a lease that must find a job waits up to 2 s for it, in case the scheduler came late)
      await sleepUntil('00:35');
      const one1 = await lease('real.one', '2s');
      expect(one1).not.toBeNull();
      await sleepAfter(one1!, '00:35', '00:45');
      await request(srv).post(`/jobs/${one1!.id}/finished`).send({ leaseToken: one1!.leaseToken }).expect(200);
      await sleepAfter(one1!, '00:35', '01:32');
      expect(await lease('real.one', '2s')).not.toBeNull();
      await sleepUntil('01:35');
      const three1 = await lease('real.three', '2s');
      expect(three1).not.toBeNull();
      await sleepAfter(three1!, '01:35', '01:38');
      await request(srv).post(`/jobs/${three1!.id}/finished`).send({ leaseToken: three1!.leaseToken }).expect(200);
      await sleepAfter(three1!, '01:35', '02:03');
      expect(await lease('real.three')).toBeNull();
      await sleepAfter(three1!, '01:35', '02:56');
      expect(await lease('real.three', '2s')).not.toBeNull();

      const states = (await request(srv).get('/jobs?periodicTaskId=r3&limit=100')).body.items
        .sort((a: { id: string }, b: { id: string }) => Number(a.id) - Number(b.id))
        .map((j: { state: string }) => j.state);
      expect(states.slice(0, 3)).toEqual(['finished', 'dropped', 'running']);
    } finally {
      await scheduler.stop();
      await stack.close();
    }
  }, 30_000);
});
