import { describe, expect, it } from 'vitest';
import type { ConcurrencyPolicy, MisfirePolicy, TaskTiming } from '../../src/domain/periodic-task.js';
import { type DueTaskFacts, planDueRun, type RunPlan } from '../../src/domain/run-plan.js';
import { parseSchedule } from '../../src/domain/schedule/index.js';

const at = (iso: string) => new Date(iso);
const CREATED = '2026-11-20T00:00:00.000Z';
const MIN = 60_000;
const plus = (iso: string, ms: number) => new Date(Date.parse(iso) + ms);

function facts(o: {
  schedule: string;
  timezone?: string;
  policy?: ConcurrencyPolicy;
  misfire?: MisfirePolicy;
  limit?: number;
  slot: string;
  open?: string | null;
  tolerance?: number | null;
  timebox?: number | null;
}): DueTaskFacts {
  const timing: TaskTiming = {
    schedule: parseSchedule(o.schedule, o.timezone ?? 'UTC'),
    createdAt: at(CREATED),
    firstRunAt: null,
    tolerance: o.tolerance ?? null,
    timebox: o.timebox ?? null,
  };
  return {
    timing,
    concurrencyPolicy: o.policy ?? 'forbid',
    misfirePolicy: o.misfire ?? 'coalesce',
    catchUpLimit: o.limit ?? 10,
    slot: at(o.slot),
    openJobId: o.open ?? null,
  };
}

const sub = (slot: string | Date, timebox: number, extra: Partial<{ runInterval: number | null; runTolerance: number | null }> = {}) => {
  const d = typeof slot === 'string' ? at(slot) : slot;
  return { runAt: d, scheduledAt: d, timebox, runInterval: null, runTolerance: null, ...extra };
};
const plan = (p: Partial<RunPlan> & Pick<RunPlan, 'nextRun'>): RunPlan => ({
  due: 1,
  coalesced: false,
  submissions: [],
  replaceOpen: false,
  skipped: null,
  gaps: [],
  ...p,
});

describe('planDueRun: concurrency policies, timebox, drop check', () => {
  const cases: { name: string; f: DueTaskFacts; now: string; plan: RunPlan }[] = [
    {
      name: 'forbid, no open job: submits the slot with half the interval as timebox, nextRun one interval on',
      f: facts({ schedule: 'every 1m', slot: '2026-11-20T00:01:00.000Z' }),
      now: '2026-11-20T00:01:00.020Z',
      plan: plan({ nextRun: at('2026-11-20T00:02:00.000Z'), submissions: [sub('2026-11-20T00:01:00.000Z', 30_000)] }),
    },
    {
      name: 'forbid with an open job: skips the run, nextRun still advances',
      f: facts({ schedule: 'every 1m', slot: '2026-11-20T00:01:00.000Z', open: '42' }),
      now: '2026-11-20T00:01:00.020Z',
      plan: plan({
        nextRun: at('2026-11-20T00:02:00.000Z'),
        skipped: { reason: 'forbid-open-job', openJobId: '42' },
        gaps: [
          {
            outcome: 'skipped',
            from: at('2026-11-20T00:01:00.000Z'),
            to: at('2026-11-20T00:01:00.020Z'),
            slots: 1,
            blockedBy: '42',
          },
        ],
      }),
    },
    {
      name: 'allow: carries the drop check (interval before the slot, default tolerance min(5 s, interval/10))',
      f: facts({ schedule: 'every 20s', policy: 'allow', slot: '2026-11-20T00:00:20.000Z' }),
      now: '2026-11-20T00:00:20.001Z',
      plan: plan({
        nextRun: at('2026-11-20T00:00:40.000Z'),
        submissions: [sub('2026-11-20T00:00:20.000Z', 10_000, { runInterval: 20_000, runTolerance: 2_000 })],
      }),
    },
    {
      name: 'allow with the task’s own tolerance and timebox',
      f: facts({ schedule: 'every 1h', policy: 'allow', slot: '2026-11-20T01:00:00.000Z', tolerance: 60_000, timebox: 600_000 }),
      now: '2026-11-20T01:00:00.000Z',
      plan: plan({
        nextRun: at('2026-11-20T02:00:00.000Z'),
        submissions: [sub('2026-11-20T01:00:00.000Z', 600_000, { runInterval: 3_600_000, runTolerance: 60_000 })],
      }),
    },
    {
      name: 'allow ignores an open job (it is allowed to overlap)',
      f: facts({ schedule: 'every 1m', policy: 'allow', slot: '2026-11-20T00:01:00.000Z', open: '7' }),
      now: '2026-11-20T00:01:00.000Z',
      plan: plan({
        nextRun: at('2026-11-20T00:02:00.000Z'),
        submissions: [sub('2026-11-20T00:01:00.000Z', 30_000, { runInterval: 60_000, runTolerance: 5_000 })],
      }),
    },
    {
      name: 'replace: submits and cancels the open job first',
      f: facts({ schedule: 'every 1m', policy: 'replace', slot: '2026-11-20T00:01:00.000Z', open: '9' }),
      now: '2026-11-20T00:01:00.000Z',
      plan: plan({ nextRun: at('2026-11-20T00:02:00.000Z'), replaceOpen: true, submissions: [sub('2026-11-20T00:01:00.000Z', 30_000)] }),
    },
    {
      name: 'cron: the timebox is half the gap to the following occurrence (Mon and Fri at 09:00: Fri → Mon is 3 days)',
      f: facts({ schedule: '0 9 * * MON,FRI', slot: '2026-11-20T09:00:00.000Z' }),
      now: '2026-11-20T09:00:00.050Z',
      plan: plan({ nextRun: at('2026-11-23T09:00:00.000Z'), submissions: [sub('2026-11-20T09:00:00.000Z', (3 * 86_400_000) / 2)] }),
    },
    {
      name: 'calendar in a time zone: nextRun is the next local 09:00 (Europe/Berlin, UTC+1 in November)',
      f: facts({ schedule: '*-*-* 09:00', timezone: 'Europe/Berlin', slot: '2026-11-20T08:00:00.000Z' }),
      now: '2026-11-20T08:00:00.000Z',
      plan: plan({ nextRun: at('2026-11-21T08:00:00.000Z'), submissions: [sub('2026-11-20T08:00:00.000Z', 43_200_000)] }),
    },
    {
      name: 'a schedule that never fires again: nextRun null, the last slot still runs',
      f: facts({ schedule: '2026-11-20 09:00:00', slot: '2026-11-20T09:00:00.000Z', timebox: 60_000 }),
      now: '2026-11-20T09:00:01.000Z',
      plan: plan({ nextRun: null, submissions: [sub('2026-11-20T09:00:00.000Z', 60_000)] }),
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(planDueRun(c.f, at(c.now))).toEqual(c.plan);
    });
  }
});

describe('planDueRun: missed runs by misfirePolicy, after downtime of 0, 1 and 1,000 slots', () => {
  const SLOT = '2026-11-20T00:01:00.000Z';
  // downtime d: now is d whole slots after the due one, 10 s into the last (every 1m)
  const nowAfter = (slots: number) => plus(SLOT, slots * MIN + 10_000);
  const nextAfter = (slots: number) => plus(SLOT, (slots + 1) * MIN);
  const slotAt = (k: number) => plus(SLOT, k * MIN);

  it('coalesce: one run for the oldest due slot, whatever the downtime', () => {
    for (const d of [0, 1, 1000]) {
      expect(planDueRun(facts({ schedule: 'every 1m', slot: SLOT }), nowAfter(d))).toEqual(
        plan({
          nextRun: nextAfter(d),
          due: d === 0 ? 1 : 2,
          coalesced: d > 0,
          submissions: [sub(SLOT, 30_000)],
          // the slots folded into the run are missed, in one record
          gaps: d === 0 ? [] : [{ outcome: 'missed', from: slotAt(1), to: nowAfter(d), slots: d, blockedBy: null }],
        }),
      );
    }
  });

  it('skip: the due run if it is on time (≤ 1 min late); after downtime, none of the missed runs', () => {
    expect(planDueRun(facts({ schedule: 'every 1m', misfire: 'skip', slot: SLOT }), nowAfter(0))).toEqual(
      plan({ nextRun: nextAfter(0), submissions: [sub(SLOT, 30_000)] }),
    );
    // one slot missed: the one due now is 10 s late and runs; the older one is skipped
    expect(planDueRun(facts({ schedule: 'every 1m', misfire: 'skip', slot: SLOT }), nowAfter(1))).toEqual(
      plan({
        nextRun: nextAfter(1),
        due: 2,
        submissions: [sub(slotAt(1), 30_000)],
        skipped: { reason: 'missed', slots: 1 },
        gaps: [{ outcome: 'missed', from: slotAt(0), to: plus(SLOT, MIN - 1), slots: 1, blockedBy: null }],
      }),
    );
    expect(planDueRun(facts({ schedule: 'every 1m', misfire: 'skip', slot: SLOT }), nowAfter(1000))).toEqual(
      plan({
        nextRun: nextAfter(1000),
        due: 1001,
        submissions: [sub(slotAt(1000), 30_000)],
        skipped: { reason: 'missed', slots: 1000 },
        gaps: [{ outcome: 'missed', from: slotAt(0), to: plus(SLOT, 1000 * MIN - 1), slots: 1000, blockedBy: null }],
      }),
    );
    // a 12-hour outage of a daily task: its run is 3 hours late, so it is missed
    const daily = facts({ schedule: '*-*-* 09:00', misfire: 'skip', slot: '2026-11-20T09:00:00.000Z' });
    expect(planDueRun(daily, at('2026-11-20T12:00:00.000Z'))).toEqual(
      plan({
        nextRun: at('2026-11-21T09:00:00.000Z'),
        skipped: { reason: 'missed', slots: 1 },
        gaps: [{ outcome: 'missed', from: at('2026-11-20T09:00:00.000Z'), to: at('2026-11-20T12:00:00.000Z'), slots: 1, blockedBy: null }],
      }),
    );
  });

  it('catch-up under allow: every due run, oldest first, at most catchUpLimit (the most recent), without the drop check', () => {
    expect(planDueRun(facts({ schedule: 'every 1m', policy: 'allow', misfire: 'catch-up', slot: SLOT }), nowAfter(0))).toEqual(
      plan({ nextRun: nextAfter(0), submissions: [sub(SLOT, 30_000, { runInterval: MIN, runTolerance: 5_000 })] }),
    );
    expect(planDueRun(facts({ schedule: 'every 1m', policy: 'allow', misfire: 'catch-up', slot: SLOT }), nowAfter(1))).toEqual(
      plan({ nextRun: nextAfter(1), due: 2, submissions: [sub(slotAt(0), 30_000), sub(slotAt(1), 30_000)] }),
    );
    const big = planDueRun(facts({ schedule: 'every 1m', policy: 'allow', misfire: 'catch-up', limit: 10, slot: SLOT }), nowAfter(1000));
    expect(big.due).toBe(1001);
    expect(big.submissions.map((s) => s.scheduledAt)).toEqual(Array.from({ length: 10 }, (_, i) => slotAt(991 + i)));
    expect(big.skipped).toEqual({ reason: 'missed', slots: 991 });
  });

  it('catch-up under forbid and replace: one run (forbid the oldest kept, replace the newest)', () => {
    const forbid = planDueRun(facts({ schedule: 'every 1m', misfire: 'catch-up', limit: 5, slot: SLOT }), nowAfter(1000));
    expect(forbid.submissions.map((s) => s.scheduledAt)).toEqual([slotAt(996)]);
    expect(forbid.skipped).toEqual({ reason: 'missed', slots: 1000 });
    const replace = planDueRun(
      facts({ schedule: 'every 1m', policy: 'replace', misfire: 'catch-up', limit: 5, slot: SLOT }),
      nowAfter(1000),
    );
    expect(replace.submissions.map((s) => s.scheduledAt)).toEqual([slotAt(1000)]);
    expect(replace.replaceOpen).toBe(true);
    const busy = planDueRun(facts({ schedule: 'every 1m', misfire: 'catch-up', slot: SLOT, open: '3' }), nowAfter(1000));
    expect(busy.submissions).toEqual([]);
    expect(busy.skipped).toEqual({ reason: 'forbid-open-job', openJobId: '3' });
  });
});

describe('planDueRun: catch-up window, endAt, and every due slot accounted for once', () => {
  const SLOT = '2026-11-20T01:00:00.000Z'; // the first slot of 'every 1h' created at 00:00
  const HOUR = 60 * MIN;
  const slotAt = (k: number) => plus(SLOT, k * HOUR);
  // every 1h, the scheduler back after 6 hours: slots 0..6 due, now 6h + 10 s after the first
  const now = plus(SLOT, 6 * HOUR + 10_000);
  const hourly = (o: Partial<Parameters<typeof facts>[0]> = {}) => facts({ schedule: 'every 1h', slot: SLOT, ...o });
  const allSlots = (p: RunPlan) => {
    const got: number[] = p.submissions.map((s) => s.scheduledAt.getTime());
    for (const g of p.gaps) for (let t = g.from.getTime(); t <= g.to.getTime(); t += HOUR) got.push(t);
    return got.sort((a, b) => a - b);
  };
  const expected = Array.from({ length: 7 }, (_, k) => slotAt(k).getTime());

  for (const misfire of ['coalesce', 'skip', 'catch-up'] as const) {
    for (const policy of ['forbid', 'allow', 'replace'] as const) {
      it(`${misfire}/${policy} with catchUpWindow 1h: slots older than an hour are missed, and each slot is either a job or a gap once`, () => {
        const p = planDueRun({ ...hourly({ misfire, policy, limit: 3 }), catchUpWindow: HOUR }, now);
        // slots 0..5 are more than an hour old; slot 6 (10 s old) is inside the window
        expect(p.gaps[0]).toEqual({
          outcome: 'missed',
          from: slotAt(0),
          to: new Date(now.getTime() - HOUR - 1),
          slots: 6,
          blockedBy: null,
        });
        expect(p.submissions.map((s) => s.scheduledAt)).toEqual([slotAt(6)]);
        expect(allSlots(p)).toEqual(expected);
        expect(p.due).toBe(7);
        expect(p.nextRun).toEqual(slotAt(7));
      });
    }
  }

  it('a window that holds no due slot: nothing submitted, every slot missed', () => {
    const p = planDueRun({ ...hourly(), catchUpWindow: 5_000 }, now);
    expect(p.submissions).toEqual([]);
    expect(p.gaps).toEqual([{ outcome: 'missed', from: slotAt(0), to: new Date(now.getTime() - 5_001), slots: 7, blockedBy: null }]);
    expect(p.skipped).toEqual({ reason: 'missed', slots: 7 });
  });

  it('a window wider than the outage changes nothing', () => {
    expect(planDueRun({ ...hourly(), catchUpWindow: 24 * HOUR }, now)).toEqual(planDueRun(hourly(), now));
  });

  it('forbid with an open job inside the window: the old slots are missed, the recent ones skipped', () => {
    const p = planDueRun({ ...hourly({ open: '9' }), catchUpWindow: 2 * HOUR + 20_000 }, now);
    expect(p.gaps.map((g) => [g.outcome, g.slots, g.blockedBy])).toEqual([
      ['missed', 4, null],
      ['skipped', 3, '9'],
    ]);
    expect(allSlots(p)).toEqual(expected);
  });

  it('catch-up under forbid: the slots before and after the one submitted are both missed', () => {
    const p = planDueRun(hourly({ misfire: 'catch-up', limit: 3 }), now);
    expect(p.submissions.map((s) => s.scheduledAt)).toEqual([slotAt(4)]);
    expect(p.gaps.map((g) => [g.from, g.slots])).toEqual([
      [slotAt(0), 4],
      [slotAt(5), 2],
    ]);
    expect(allSlots(p)).toEqual(expected);
  });

  it('endAt: no slot at or after it; nextRun null once it is reached', () => {
    const endAt = slotAt(3);
    const p = planDueRun({ ...hourly({ misfire: 'catch-up', policy: 'allow', limit: 10 }), endAt }, now);
    expect(p.submissions.map((s) => s.scheduledAt)).toEqual([slotAt(0), slotAt(1), slotAt(2)]);
    expect(p.nextRun).toBeNull();
    expect(p.gaps).toEqual([]);
    // the due slot itself at endAt: nothing at all
    const after = planDueRun({ ...hourly({ slot: slotAt(3).toISOString() }), endAt }, now);
    expect(after).toMatchObject({ nextRun: null, submissions: [], gaps: [], due: 0 });
    // endAt ahead: nextRun stops before it
    const ahead = planDueRun({ ...hourly({ slot: slotAt(6).toISOString() }), endAt: plus(SLOT, 7 * HOUR) }, now);
    expect(ahead.submissions.map((s) => s.scheduledAt)).toEqual([slotAt(6)]);
    expect(ahead.nextRun).toBeNull();
    const later = planDueRun({ ...hourly({ slot: slotAt(6).toISOString() }), endAt: plus(SLOT, 7 * HOUR + 1) }, now);
    expect(later.nextRun).toEqual(slotAt(7));
  });
});
