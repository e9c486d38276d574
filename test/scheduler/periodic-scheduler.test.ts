import request from 'supertest';
import { beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { PeriodicScheduler } from '../../src/scheduler/periodic-scheduler.js';
import type { JobRow } from '../../src/repositories/jobs.js';
import type { TaskCreateInput } from '../../src/services/periodic-tasks.js';
import { type TestStack } from '../support/app.js';
import { type TestDatabase } from '../support/db.js';
import { useTestStack } from '../support/fixture.js';

const T0 = '2026-11-20T00:00:00.000Z';
const at = (iso: string) => new Date(iso);
const ms = (iso: string, plus: number) => new Date(new Date(iso).getTime() + plus);

let tdb: TestDatabase;
let stack: TestStack;
let scheduler: PeriodicScheduler;
const clock = new ManualClock(T0);

/** The columns of a job row these tests read (id as text). */
type JobRowLite = Pick<
  JobRow,
  | 'type'
  | 'group_'
  | 'args'
  | 'subject'
  | 'submitter'
  | 'priority'
  | 'state'
  | 'run_at'
  | 'max_attempts'
  | 'periodic_task_id'
  | 'scheduled_at'
  | 'timebox'
  | 'run_interval'
  | 'run_tolerance'
  | 'created_at'
> & { id: string };

async function jobsOf(taskId: string): Promise<JobRowLite[]> {
  const { rows } = await tdb.db.pool.query<JobRowLite>(
    `select id::text, type, group_, args, subject, submitter, priority, state, run_at, max_attempts, periodic_task_id,
            scheduled_at, timebox, run_interval, run_tolerance, created_at
       from job where periodic_task_id = $1 order by job.id`,
    [taskId],
  );
  return rows;
}

async function taskRow(id: string) {
  const { rows } = await tdb.db.pool.query('select nextrun, worker, marked from periodic_task where id = $1', [id]);
  return rows[0] as { nextrun: Date | null; worker: string | null; marked: Date | null };
}

const createTask = (input: Partial<TaskCreateInput> & { id: string }) =>
  stack.services.tasks.create({ task: 'work', schedule: 'every 1m', ...input });

useTestStack({ clock, listen: false, instanceId: 'instance-a' }, (f) => {
  ({ tdb, stack } = f);
});
beforeEach(async () => {
  clock.set(T0);
  scheduler = new PeriodicScheduler(stack.ctx); // a fresh one: a tick remembers when it last cleared marks
  await tdb.db.pool.query('delete from job');
  await tdb.db.pool.query('delete from periodic_task');
});

describe('PeriodicScheduler.tick', () => {
  it('submits a due run as a job of the task with runAt = the slot, then advances nextRun', async () => {
    await createTask({
      id: 'mail',
      task: 'mail.poll',
      group: 'mail',
      args: { box: 'INBOX', n: [1, 2] },
      subject: 'poll the inbox',
      submitter: 'channel-service',
      priority: 4,
      schedule: 'every 1m',
    });
    const s = await scheduler.tick(at('2026-11-20T00:01:00.020Z'));
    expect(s).toMatchObject({ taken: 1, submitted: 1, skipped: 0, batches: 1, duplicates: 0, coalesced: 0 });
    const jobs = await jobsOf('mail');
    expect(jobs).toEqual([
      expect.objectContaining({
        type: 'mail.poll',
        group_: 'mail',
        args: { box: 'INBOX', n: [1, 2] },
        subject: 'poll the inbox',
        submitter: 'channel-service',
        priority: 4,
        state: 'queued',
        run_at: at('2026-11-20T00:01:00.000Z'),
        scheduled_at: at('2026-11-20T00:01:00.000Z'),
        max_attempts: 1,
        timebox: 30_000,
        run_interval: null,
        run_tolerance: null,
        created_at: at('2026-11-20T00:01:00.020Z'),
      }),
    ]);
    expect(await taskRow('mail')).toEqual({ nextrun: at('2026-11-20T00:02:00.000Z'), worker: null, marked: null });
  });

  it('submits nothing before nextRun and never the same slot twice', async () => {
    await createTask({ id: 'once' });
    expect((await scheduler.tick(at('2026-11-20T00:00:59.999Z'))).submitted).toBe(0);
    expect((await scheduler.tick(at('2026-11-20T00:01:00.000Z'))).submitted).toBe(1);
    expect((await scheduler.tick(at('2026-11-20T00:01:00.000Z'))).submitted).toBe(0);
    expect((await scheduler.tick(at('2026-11-20T00:01:30.000Z'))).submitted).toBe(0);
    expect(await jobsOf('once')).toHaveLength(1);
  });

  it('uses the task timebox when set and half the interval otherwise', async () => {
    await createTask({ id: 'tb', schedule: 'every 10m', timebox: '1m30s' });
    await createTask({ id: 'cr', schedule: '0 9,10,14 * * *' }); // gaps 1 h, 4 h, 19 h
    await scheduler.tick(at('2026-11-20T10:00:00.000Z'));
    expect((await jobsOf('tb'))[0]!.timebox).toBe(90_000);
    expect((await jobsOf('cr'))[0]).toMatchObject({ scheduled_at: at('2026-11-20T09:00:00.000Z'), timebox: 30 * 60_000 });
  });

  it('skips a run under policy forbid while a job of the task is open, and still advances nextRun', async () => {
    await createTask({ id: 'fb', concurrencyPolicy: 'forbid' });
    await scheduler.tick(at('2026-11-20T00:01:00.000Z'));
    const s = await scheduler.tick(at('2026-11-20T00:02:00.000Z'));
    expect(s).toMatchObject({ taken: 1, submitted: 0, skipped: 1 });
    expect(await jobsOf('fb')).toHaveLength(1);
    expect((await taskRow('fb')).nextrun).toEqual(at('2026-11-20T00:03:00.000Z'));

    await tdb.db.pool.query(`update job set state = 'running', lease_token = gen_random_uuid() where periodic_task_id = 'fb'`);
    expect((await scheduler.tick(at('2026-11-20T00:03:00.000Z'))).skipped).toBe(1);

    await tdb.db.pool.query(`update job set state = 'finished' where periodic_task_id = 'fb'`);
    expect((await scheduler.tick(at('2026-11-20T00:04:00.000Z'))).submitted).toBe(1);
    expect((await jobsOf('fb')).map((j) => j.scheduled_at)).toEqual([at('2026-11-20T00:01:00.000Z'), at('2026-11-20T00:04:00.000Z')]);
  });

  it('submits every run under policy allow, with the interval and tolerance for the drop check', async () => {
    await createTask({ id: 'al', concurrencyPolicy: 'allow' });
    await createTask({ id: 'al2', concurrencyPolicy: 'allow', schedule: 'every 10s', tolerance: '250ms' });
    await scheduler.tick(at('2026-11-20T00:01:00.000Z'));
    await scheduler.tick(at('2026-11-20T00:02:00.000Z'));
    const jobs = await jobsOf('al');
    expect(jobs.map((j) => [j.state, j.scheduled_at, j.run_interval, j.run_tolerance])).toEqual([
      ['queued', at('2026-11-20T00:01:00.000Z'), 60_000, 5_000],
      ['queued', at('2026-11-20T00:02:00.000Z'), 60_000, 5_000],
    ]);
    expect((await jobsOf('al2'))[0]).toMatchObject({ run_interval: 10_000, run_tolerance: 250 });
  });

  it('measures the drop-check interval of a cron schedule from the occurrence before the slot', async () => {
    // Mon–Fri 09:00: Friday's run comes one day after Thursday's, Monday's three days after Friday's.
    clock.set('2026-11-18T12:00:00.000Z'); // a Wednesday
    await createTask({ id: 'wk', concurrencyPolicy: 'allow', schedule: '0 9 * * 1-5' });
    await scheduler.tick(at('2026-11-20T09:00:00.000Z')); // Thursday 19th coalesced into…
    await tdb.db.pool.query('delete from job');
    await scheduler.tick(at('2026-11-20T09:00:01.000Z')); // Friday 20th, nothing (nextRun is Monday)
    await scheduler.tick(at('2026-11-23T09:00:00.000Z')); // Monday 23rd
    const jobs = await jobsOf('wk');
    expect(jobs.map((j) => [j.scheduled_at, j.run_interval, j.run_tolerance])).toEqual([
      [at('2026-11-23T09:00:00.000Z'), 3 * 86_400_000, 5_000],
    ]);
  });

  it('cancels the open job and submits a new one under policy replace', async () => {
    await createTask({ id: 'rp', concurrencyPolicy: 'replace' });
    await scheduler.tick(at('2026-11-20T00:01:00.000Z'));
    const [first] = await jobsOf('rp');
    await tdb.db.pool.query(`update job set state = 'running', lease_token = gen_random_uuid() where id = $1`, [first!.id]);
    const s = await scheduler.tick(at('2026-11-20T00:02:00.000Z'));
    expect(s).toMatchObject({ submitted: 1, cancelled: 1 });
    const { rows } = await tdb.db.pool.query(
      `select id::text, state, lease_token is not null as has_token, finished_at, error from job where periodic_task_id = 'rp' order by job.id`,
    );
    expect(rows).toEqual([
      {
        id: first!.id,
        state: 'cancelled',
        has_token: true, // a running job keeps its token: its worker's heartbeat answers cancel
        finished_at: at('2026-11-20T00:02:00.000Z'),
        error: expect.objectContaining({ kind: 'replaced' }),
      },
      expect.objectContaining({ state: 'queued', has_token: false }),
    ]);
  });

  it('coalesces the runs missed during downtime into one job and moves nextRun past now', async () => {
    await createTask({ id: 'down', concurrencyPolicy: 'allow' });
    const s = await scheduler.tick(at('2026-11-20T00:10:30.000Z')); // slots 00:01 … 00:10 were missed
    expect(s).toMatchObject({ taken: 1, submitted: 1, coalesced: 1 });
    const jobs = await jobsOf('down');
    expect(jobs).toHaveLength(1);
    expect(jobs[0]!.scheduled_at).toEqual(at('2026-11-20T00:01:00.000Z'));
    expect((await taskRow('down')).nextrun).toEqual(at('2026-11-20T00:11:00.000Z'));
  });

  it('moves nextRun strictly past now when now is exactly a slot', async () => {
    await createTask({ id: 'edge' });
    await scheduler.tick(at('2026-11-20T00:05:00.000Z'));
    expect((await taskRow('edge')).nextrun).toEqual(at('2026-11-20T00:06:00.000Z'));
  });

  it('takes a task whose mark is older than 10 s, but not one marked 5 s ago', async () => {
    await createTask({ id: 'stale' });
    await createTask({ id: 'fresh' });
    const now = at('2026-11-20T00:01:00.000Z');
    await tdb.db.pool.query(`update periodic_task set worker = 'instance-dead', marked = $1 where id = 'stale'`, [
      ms(now.toISOString(), -11_000),
    ]);
    await tdb.db.pool.query(`update periodic_task set worker = 'instance-b', marked = $1 where id = 'fresh'`, [
      ms(now.toISOString(), -5_000),
    ]);
    const s = await scheduler.tick(now);
    expect(s).toMatchObject({ clearedMarks: 1, taken: 1, submitted: 1 });
    expect(await jobsOf('stale')).toHaveLength(1);
    expect(await jobsOf('fresh')).toHaveLength(0);
    expect(await taskRow('fresh')).toMatchObject({ worker: 'instance-b', nextrun: now });

    // Once that mark is 10 s old too, the task is taken.
    const later = await scheduler.tick(ms(now.toISOString(), 5_000));
    expect(later).toMatchObject({ clearedMarks: 1, submitted: 1 });
    expect(await taskRow('fresh')).toMatchObject({ worker: null, marked: null, nextrun: at('2026-11-20T00:02:00.000Z') });
  });

  it('clears stale marks of tasks that are not due', async () => {
    await createTask({ id: 'idle', schedule: 'every 1h' });
    await tdb.db.pool.query(`update periodic_task set worker = 'instance-dead', marked = $1`, [at('2026-11-19T00:00:00.000Z')]);
    expect((await scheduler.tick(at('2026-11-20T00:00:01.000Z'))).clearedMarks).toBe(1);
    expect(await taskRow('idle')).toMatchObject({ worker: null, marked: null });
  });

  it('clears stale marks at most once a second of its clock, while a take passes over them anyway', async () => {
    await createTask({ id: 'idle', schedule: 'every 1h' });
    const dead = async () =>
      tdb.db.pool.query(`update periodic_task set worker = 'instance-dead', marked = $1`, [at('2026-11-19T00:00:00.000Z')]);
    await dead();
    expect((await scheduler.tick(at('2026-11-20T00:00:01.000Z'))).clearedMarks).toBe(1);
    await dead();
    expect((await scheduler.tick(at('2026-11-20T00:00:01.900Z'))).clearedMarks).toBe(0);
    expect(await taskRow('idle')).toMatchObject({ worker: 'instance-dead' });
    expect((await scheduler.tick(at('2026-11-20T00:00:02.000Z'))).clearedMarks).toBe(1);
    // a clock set back (tests, a corrected clock) clears at once
    await dead();
    expect((await scheduler.tick(at('2026-11-20T00:00:00.000Z'))).clearedMarks).toBe(1);
  });

  it('runs a tick that finds less than a batch in one transaction, and widens to its second lane on a full take', async () => {
    const transactions = { n: 0 };
    const db = stack.ctx.db;
    const kysely = new Proxy(db.kysely, {
      get(target, key) {
        if (key === 'transaction') transactions.n++;
        const value = Reflect.get(target, key, target) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value; // Kysely's private fields
      },
    });
    const counted = new Proxy(db, { get: (target, key, receiver) => (key === 'kysely' ? kysely : Reflect.get(target, key, receiver)) });
    const lanes = new PeriodicScheduler({ ...stack.ctx, db: counted }, { batchSize: 16, concurrency: 2 });
    for (let i = 0; i < 5; i++) await createTask({ id: `few-${i}`, concurrencyPolicy: 'allow' });
    expect(await lanes.tick(at('2026-11-20T00:01:00.000Z'))).toMatchObject({ taken: 5, submitted: 5 });
    expect(transactions.n).toBe(1); // the second lane never began a transaction

    for (let i = 0; i < 35; i++) await createTask({ id: `many-${i}`, concurrencyPolicy: 'allow' });
    transactions.n = 0;
    // 40 due in batches of 16: two full takes, then the lanes end on takes that found fewer
    // (one lane alone would stop after 16, 16, 8: three transactions)
    expect(await lanes.tick(at('2026-11-20T00:02:00.000Z'))).toMatchObject({ taken: 40, submitted: 40 });
    expect(transactions.n).toBe(4);
    // every task one job per tick: 5 from the first, 40 from this one
    const { rows } = await tdb.db.pool.query<{ n: number; tasks: number }>(
      `select count(*)::int as n, count(distinct periodic_task_id)::int as tasks from job`,
    );
    expect(rows[0]).toEqual({ n: 45, tasks: 40 });
  });

  it('passes over disabled tasks', async () => {
    await createTask({ id: 'off', enabled: false });
    await createTask({ id: 'was-on' });
    await request(stack.app.server).patch('/periodic-tasks/was-on').send({ enabled: false }).expect(200);
    expect((await scheduler.tick(at('2026-11-20T01:00:00.000Z'))).taken).toBe(0);
  });

  it('submits nothing more for a task that was deleted, and nothing for an owner whose tasks were deleted', async () => {
    await createTask({ id: 'c1', owner: 'channel:1' });
    await createTask({ id: 'c2', owner: 'channel:1' });
    await createTask({ id: 'c3', owner: 'channel:2' });
    await scheduler.tick(at('2026-11-20T00:01:00.000Z'));
    const res = await request(stack.app.server).delete('/periodic-tasks').query({ owner: 'channel:1' });
    expect(res.body).toEqual({ deleted: 2 });
    await tdb.db.pool.query(`update job set state = 'finished'`);
    const s = await scheduler.tick(at('2026-11-20T00:02:00.000Z'));
    expect(s).toMatchObject({ taken: 1, submitted: 1 });
    expect(await jobsOf('c3')).toHaveLength(2);
    const { rows } = await tdb.db.pool.query(`select count(*)::int as n from job where periodic_task_id is null`);
    expect(rows[0].n).toBe(2); // the jobs of deleted tasks stay, unlinked
  });

  it('handles many due tasks in batches', async () => {
    const n = 1_234;
    await tdb.db.pool.query(
      `insert into periodic_task (id, task, timer, nextrun, created)
       select 'bulk-' || i, 'bulk', 'every 1m', $1::timestamptz, $2::timestamptz from generate_series(1, $3::int) i`,
      [at('2026-11-20T00:01:00.000Z'), at(T0), n],
    );
    // one lane, so the number of batches is exact (with two, it depends on how their takes interleave)
    const small = new PeriodicScheduler(stack.ctx, { batchSize: 500, concurrency: 1 });
    const s = await small.tick(at('2026-11-20T00:01:00.000Z'));
    expect(s).toMatchObject({ taken: n, submitted: n, batches: 3 });
    const { rows } = await tdb.db.pool.query(
      `select count(*)::int as jobs, count(distinct periodic_task_id)::int as tasks from job where type = 'bulk'`,
    );
    expect(rows[0]).toEqual({ jobs: n, tasks: n });
    const next = await tdb.db.pool.query(`select distinct nextrun from periodic_task`);
    expect(next.rows).toEqual([{ nextrun: at('2026-11-20T00:02:00.000Z') }]);
  });

  it('submits every due task exactly once with two batches in flight', async () => {
    const n = 1_234;
    await tdb.db.pool.query(
      `insert into periodic_task (id, task, timer, nextrun, created)
       select 'lanes-' || i, 'lanes', 'every 1m', $1::timestamptz, $2::timestamptz from generate_series(1, $3::int) i`,
      [at('2026-11-20T00:01:00.000Z'), at(T0), n],
    );
    const lanes = new PeriodicScheduler(stack.ctx, { batchSize: 100, concurrency: 2 });
    const s = await lanes.tick(at('2026-11-20T00:01:00.000Z'));
    expect(s).toMatchObject({ taken: n, submitted: n });
    expect(s.batches).toBeGreaterThanOrEqual(13);
    const { rows } = await tdb.db.pool.query(
      `select count(*)::int as jobs, count(distinct periodic_task_id)::int as tasks from job where type = 'lanes'`,
    );
    expect(rows[0]).toEqual({ jobs: n, tasks: n });
  });

  it('runs a schedule change from the new nextRun on', async () => {
    await createTask({ id: 'ch', schedule: 'every 1h' });
    clock.set('2026-11-20T00:21:00.000Z');
    await request(stack.app.server).patch('/periodic-tasks/ch').send({ schedule: '*/5 * * * *' }).expect(200);
    expect((await scheduler.tick(at('2026-11-20T00:25:00.000Z'))).submitted).toBe(1);
    expect((await jobsOf('ch'))[0]!.scheduled_at).toEqual(at('2026-11-20T00:25:00.000Z'));
  });

  it('passes over a slot that already has a job, and still advances nextRun', async () => {
    await createTask({ id: 'dupe', concurrencyPolicy: 'allow' });
    await createTask({ id: 'other', concurrencyPolicy: 'allow' });
    await tdb.db.pool.query(
      `insert into job (type, run_at, periodic_task_id, scheduled_at, state) values ('work', $1, 'dupe', $1, 'finished')`,
      [at('2026-11-20T00:01:00.000Z')],
    );
    const s = await scheduler.tick(at('2026-11-20T00:01:00.000Z'));
    expect(s).toMatchObject({ taken: 2, submitted: 1, duplicates: 1 });
    expect(await jobsOf('dupe')).toHaveLength(1);
    expect(await jobsOf('other')).toHaveLength(1);
    expect((await taskRow('dupe')).nextrun).toEqual(at('2026-11-20T00:02:00.000Z'));
  });

  it('stops scheduling a task whose stored schedule cannot be read', async () => {
    await createTask({ id: 'bad' });
    await tdb.db.pool.query(`update periodic_task set timer = 'every banana' where id = 'bad'`);
    const s = await scheduler.tick(at('2026-11-20T00:01:00.000Z'));
    expect(s).toMatchObject({ taken: 1, submitted: 0 });
    expect(await taskRow('bad')).toMatchObject({ nextrun: null, worker: null });
  });
});

describe('PeriodicScheduler.stop', () => {
  it("unmarks this instance's marks and leaves other instances' marks alone", async () => {
    await createTask({ id: 'mine' });
    await createTask({ id: 'theirs' });
    await tdb.db.pool.query(`update periodic_task set worker = 'instance-a', marked = $1 where id = 'mine'`, [at(T0)]);
    await tdb.db.pool.query(`update periodic_task set worker = 'instance-b', marked = $1 where id = 'theirs'`, [at(T0)]);
    const s = new PeriodicScheduler(stack.ctx, { maxSleepMs: 50 });
    s.start();
    await s.stop();
    expect(await taskRow('mine')).toMatchObject({ worker: null, marked: null });
    expect(await taskRow('theirs')).toMatchObject({ worker: 'instance-b' });
  });
});
