import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { Notifications } from '../../src/db/notifications.js';
import { occurrences, parseSchedule } from '../../src/domain/schedule/index.js';
import { PeriodicScheduler, type TickSummary } from '../../src/scheduler/periodic-scheduler.js';
import type { ServiceContext } from '../../src/services/context.js';
import { PeriodicTaskService } from '../../src/services/periodic-tasks.js';
import { testLogger } from '../support/app.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

const T0 = Date.parse('2026-11-20T00:00:00.000Z');
const TASKS = 200;
const DURATION_MS = 3 * 60_000;
const STEP_MS = 500;

let tdb: TestDatabase;
const contexts: ServiceContext[] = [];

function context(instanceId: string, clock: ManualClock): ServiceContext {
  const db = tdb.connect(4);
  return { db, clock, logger: testLogger(), notifications: new Notifications(db.url), instanceId, retentionMs: 86_400_000 };
}

beforeAll(async () => {
  tdb = await createTestDatabase();
});
afterAll(async () => {
  await tdb?.destroy();
});

describe('three PeriodicScheduler instances on one database', () => {
  it('submit every slot of every task exactly once and miss none', async () => {
    const creator = new PeriodicTaskService(context('creator', new ManualClock(T0)));
    const schedules: { id: string; schedule: string }[] = [];
    for (let i = 0; i < TASKS; i++) {
      const every = 1 + (i % 5);
      const schedule = i % 10 === 9 ? `*/${every} * * * * *` : `every ${every}s offset ${(i * 37) % 1000}ms`;
      const id = `task-${String(i).padStart(3, '0')}`;
      await creator.create({ id, task: 'slot-check', schedule, concurrencyPolicy: 'allow' });
      schedules.push({ id, schedule });
    }

    const instances = [0, 1, 2].map((i) => {
      const clock = new ManualClock(T0);
      const ctx = context(`instance-${i}`, clock);
      contexts.push(ctx);
      return { clock, scheduler: new PeriodicScheduler(ctx, { batchSize: 16 }), jitter: i * 61 };
    });

    const summaries: TickSummary[] = [];
    let lastNow = T0;
    for (let t = T0 + STEP_MS; t <= T0 + DURATION_MS; t += STEP_MS) {
      const results = await Promise.all(
        instances.map(({ clock, scheduler, jitter }) => {
          clock.set(t + jitter);
          return scheduler.tick(clock.now());
        }),
      );
      summaries.push(...results);
      lastNow = Math.max(lastNow, ...instances.map((x) => x.clock.now().getTime()));
    }

    const total = (k: keyof TickSummary) => summaries.reduce((n, s) => n + (s[k] as number), 0);
    const { rows } = await tdb.db.pool.query<{ periodic_task_id: string; slots: Date[] }>(
      `select periodic_task_id, array_agg(scheduled_at order by scheduled_at) as slots from job group by periodic_task_id`,
    );
    const bySlot = new Map(rows.map((r) => [r.periodic_task_id, r.slots.map((d) => d.getTime())]));

    let expectedJobs = 0;
    for (const { id, schedule } of schedules) {
      const expected = occurrences(parseSchedule(schedule), { after: new Date(T0 - 1), count: 400, anchor: new Date(T0) })
        .map((d) => d.getTime())
        .filter((x) => x <= lastNow);
      expectedJobs += expected.length;
      expect({ id, slots: bySlot.get(id) ?? [] }).toEqual({ id, slots: expected });
    }
    const jobCount = (await tdb.db.pool.query(`select count(*)::int as n from job`)).rows[0].n;
    expect(jobCount).toBe(expectedJobs);
    expect(total('submitted')).toBe(expectedJobs);
    expect(total('duplicates')).toBe(0);
    expect(total('coalesced')).toBe(0);
    // Each instance did part of the work.
    for (const inst of instances) {
      const done = summaries.filter((_, i) => i % 3 === instances.indexOf(inst)).reduce((n, s) => n + s.submitted, 0);
      expect(done).toBeGreaterThan(0);
    }
    const marks = await tdb.db.pool.query(`select count(*)::int as n from periodic_task where worker is not null`);
    expect(marks.rows[0].n).toBe(0);
  }, 120_000);
});
