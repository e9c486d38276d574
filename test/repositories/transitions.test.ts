import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { JOB_TRANSITIONS, type LeasedJob } from '../../src/domain/job.js';
import { jobReleaseLeases } from '../../src/repositories/jobs.js';
import { LeaseReaper } from '../../src/scheduler/lease-reaper.js';
import { PeriodicScheduler } from '../../src/scheduler/periodic-scheduler.js';
import { createTestStack, type TestStack } from '../support/app.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

/**
 * The job state machine as the statements really run it: a trigger (in this test's database only)
 * records every change of job.state; a scenario makes every kind of move through the services and
 * loops. The moves recorded must be exactly JOB_TRANSITIONS: none outside it, and none of it unused.
 */

const T0 = '2026-11-20T00:00:00.000Z';
const clock = new ManualClock(T0);
const plus = (ms: number) => clock.set(new Date(clock.now().getTime() + ms).toISOString());
let tdb: TestDatabase;
let stack: TestStack;

beforeAll(async () => {
  tdb = await createTestDatabase();
  await tdb.db.pool.query(`
    CREATE TABLE test_transition (from_state text NOT NULL, to_state text NOT NULL);
    CREATE FUNCTION test_record_transition() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO test_transition VALUES (OLD.state, NEW.state); RETURN NEW; END $$;
    CREATE TRIGGER test_record_transition AFTER UPDATE OF state ON job
      FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state) EXECUTE FUNCTION test_record_transition();`);
  stack = await createTestStack({ db: tdb.db, clock, listen: false });
});
afterAll(async () => {
  await stack?.close();
  await tdb?.destroy();
});

describe('job state transitions', () => {
  it('are exactly the moves JOB_TRANSITIONS lists', async () => {
    const jobs = stack.services.jobs;
    const workers = stack.services.workers;
    const lease = async (type: string, leaseMs = 30_000): Promise<LeasedJob> => {
      const [job] = await workers.next({ worker: 'w', types: [type], leaseMs });
      expect(job, `a ${type} job to lease`).toBeDefined();
      return job!;
    };

    // queued → running → finished
    await jobs.create({ type: 'ok' });
    const ok = await lease('ok');
    await workers.report({ id: ok.id, leaseToken: ok.leaseToken, outcome: 'finished' });
    // running → queued (failure with attempts left) → running → failed (none left) → queued (retry)
    const flaky = (await jobs.create({ type: 'flaky', maxAttempts: 2 })).job;
    let f = await lease('flaky');
    await workers.report({ id: f.id, leaseToken: f.leaseToken, outcome: 'failed', error: 'boom', retryInMs: 0 });
    f = await lease('flaky');
    await workers.report({ id: f.id, leaseToken: f.leaseToken, outcome: 'failed', error: 'boom again' });
    await jobs.retry(flaky.id);
    // lease expiry: requeued with attempts left, failed without
    const reaper = new LeaseReaper(stack.ctx);
    await jobs.create({ type: 'expiring', maxAttempts: 2 });
    await lease('expiring', 1_000);
    plus(2_000);
    await reaper.tick(clock.now());
    await lease('expiring', 1_000);
    plus(2_000);
    await reaper.tick(clock.now());
    // past deadline + grace: failed (timebox)
    await jobs.create({ type: 'boxed', timebox: 1_000 });
    await lease('boxed', 60_000);
    plus(2_500);
    await reaper.tick(clock.now());
    // given back: a lease whose worker went away before receiving it
    await jobs.create({ type: 'given-back' });
    const g = await lease('given-back');
    expect(await jobReleaseLeases(tdb.db, [{ id: g.id, leaseToken: g.leaseToken }], clock.now())).toBe(1);
    // cancel while queued and while running; a cancelled job is retried
    const queuedCancel = (await jobs.create({ type: 'cancel-q' })).job;
    await jobs.cancel(queuedCancel.id);
    await jobs.retry(queuedCancel.id);
    await jobs.create({ type: 'cancel-r' });
    const r = await lease('cancel-r');
    await jobs.cancel(r.id);
    // policy replace: a new run cancels the open job, queued or running
    await stack.services.tasks.create({ id: 'rep', task: 'rep', schedule: 'every 1h', concurrencyPolicy: 'replace' });
    await stack.services.tasks.trigger('rep');
    await stack.services.tasks.trigger('rep'); // cancels the queued one
    await lease('rep');
    await stack.services.tasks.trigger('rep'); // cancels the running one
    // the drop check: a run that would begin too soon after the last one began is dropped
    clock.set('2026-11-21T00:00:00.000Z');
    await stack.services.tasks.create({ id: 'drop', task: 'drop', schedule: 'every 1m', concurrencyPolicy: 'allow' });
    const scheduler = new PeriodicScheduler(stack.ctx);
    clock.set('2026-11-21T00:01:00.000Z');
    await scheduler.tick(clock.now());
    clock.set('2026-11-21T00:01:58.000Z'); // the 00:01 run begins late …
    const late = await lease('drop');
    await workers.report({ id: late.id, leaseToken: late.leaseToken, outcome: 'finished' });
    clock.set('2026-11-21T00:02:00.000Z');
    await scheduler.tick(clock.now());
    expect(await workers.next({ worker: 'w', types: ['drop'] })).toEqual([]); // … so the 00:02 run is dropped
    const dropped = await tdb.db.pool.query<{ id: string }>(`select id::text from job where type = 'drop' and state = 'dropped'`);
    await jobs.retry(dropped.rows[0]!.id);

    // dependencies: waiting → queued when the last one finished; waiting → cancelled when one
    // failed (and by a cancel)
    const [first, , third] = await jobs.createMany([
      { type: 'dep', ref: 'a', maxAttempts: 1 },
      { type: 'dep', ref: 'b', after: ['a'] },
      { type: 'dep-c', after: ['a'] },
    ]);
    const d = await lease('dep');
    expect(d.id).toBe(first!.id);
    await workers.report({ id: d.id, leaseToken: d.leaseToken, outcome: 'finished' });
    await jobs.cancel((await jobs.createMany([{ type: 'dep', after: [third!.id] }]))[0]!.id);
    await jobs.createMany([
      { type: 'dep-x', ref: 'x', maxAttempts: 1 },
      { type: 'dep-y', after: ['x'] },
    ]);
    const x = await lease('dep-x');
    await workers.report({ id: x.id, leaseToken: x.leaseToken, outcome: 'failed', error: 'no' });

    const { rows } = await tdb.db.pool.query<{ from_state: string; to_state: string }>(
      'select distinct from_state, to_state from test_transition order by 1, 2',
    );
    const recorded = rows.map((x) => `${x.from_state} → ${x.to_state}`);
    const listed = JOB_TRANSITIONS.map((t) => `${t.from} → ${t.to}`).sort();
    expect(recorded).toEqual(listed);
  });
});
