import { describe, expect, it } from 'vitest';
import type { ConcurrencyPolicy, TaskTiming } from '../../src/domain/periodic-task.js';
import { type DueTaskFacts, planDueRun, type RunPlan } from '../../src/domain/run-plan.js';
import { parseSchedule } from '../../src/domain/schedule/index.js';

const at = (iso: string) => new Date(iso);
const CREATED = '2026-11-20T00:00:00.000Z';

function facts(o: {
  schedule: string;
  timezone?: string;
  policy?: ConcurrencyPolicy;
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
  return { timing, concurrencyPolicy: o.policy ?? 'forbid', slot: at(o.slot), openJobId: o.open ?? null };
}

const submit = (slot: string, timebox: number, extra: Partial<{ runInterval: number | null; runTolerance: number | null }> = {}) => ({
  runAt: at(slot),
  scheduledAt: at(slot),
  timebox,
  runInterval: null,
  runTolerance: null,
  ...extra,
});

describe('planDueRun: what the scheduler does with one due task', () => {
  const cases: { name: string; f: DueTaskFacts; now: string; plan: RunPlan }[] = [
    {
      name: 'forbid, no open job: submits the slot with half the interval as timebox, nextRun one interval on',
      f: facts({ schedule: 'every 1m', slot: '2026-11-20T00:01:00.000Z' }),
      now: '2026-11-20T00:01:00.020Z',
      plan: { nextRun: at('2026-11-20T00:02:00.000Z'), coalesced: false, action: 'submit', replaceOpen: false, submission: submit('2026-11-20T00:01:00.000Z', 30_000) },
    },
    {
      name: 'forbid with an open job: skips the run, nextRun still advances',
      f: facts({ schedule: 'every 1m', slot: '2026-11-20T00:01:00.000Z', open: '42' }),
      now: '2026-11-20T00:01:00.020Z',
      plan: { nextRun: at('2026-11-20T00:02:00.000Z'), coalesced: false, action: 'skip', reason: 'forbid-open-job', openJobId: '42' },
    },
    {
      name: 'allow: carries the drop check (interval before the slot, default tolerance min(5 s, interval/10))',
      f: facts({ schedule: 'every 20s', policy: 'allow', slot: '2026-11-20T00:00:20.000Z' }),
      now: '2026-11-20T00:00:20.001Z',
      plan: {
        nextRun: at('2026-11-20T00:00:40.000Z'),
        coalesced: false,
        action: 'submit',
        replaceOpen: false,
        submission: submit('2026-11-20T00:00:20.000Z', 10_000, { runInterval: 20_000, runTolerance: 2_000 }),
      },
    },
    {
      name: 'allow with the task’s own tolerance and timebox',
      f: facts({ schedule: 'every 1h', policy: 'allow', slot: '2026-11-20T01:00:00.000Z', tolerance: 60_000, timebox: 600_000 }),
      now: '2026-11-20T01:00:00.000Z',
      plan: {
        nextRun: at('2026-11-20T02:00:00.000Z'),
        coalesced: false,
        action: 'submit',
        replaceOpen: false,
        submission: submit('2026-11-20T01:00:00.000Z', 600_000, { runInterval: 3_600_000, runTolerance: 60_000 }),
      },
    },
    {
      name: 'allow ignores an open job (it is allowed to overlap)',
      f: facts({ schedule: 'every 1m', policy: 'allow', slot: '2026-11-20T00:01:00.000Z', open: '7' }),
      now: '2026-11-20T00:01:00.000Z',
      plan: {
        nextRun: at('2026-11-20T00:02:00.000Z'),
        coalesced: false,
        action: 'submit',
        replaceOpen: false,
        submission: submit('2026-11-20T00:01:00.000Z', 30_000, { runInterval: 60_000, runTolerance: 5_000 }),
      },
    },
    {
      name: 'replace: submits and cancels the open job first',
      f: facts({ schedule: 'every 1m', policy: 'replace', slot: '2026-11-20T00:01:00.000Z', open: '9' }),
      now: '2026-11-20T00:01:00.000Z',
      plan: { nextRun: at('2026-11-20T00:02:00.000Z'), coalesced: false, action: 'submit', replaceOpen: true, submission: submit('2026-11-20T00:01:00.000Z', 30_000) },
    },
    {
      name: 'after downtime: the missed slots coalesce into one run of the oldest slot, nextRun the first after now',
      f: facts({ schedule: 'every 1m', slot: '2026-11-20T00:01:00.000Z' }),
      now: '2026-11-20T00:05:30.000Z',
      plan: { nextRun: at('2026-11-20T00:06:00.000Z'), coalesced: true, action: 'submit', replaceOpen: false, submission: submit('2026-11-20T00:01:00.000Z', 30_000) },
    },
    {
      name: 'downtime of exactly one slot is not coalescing: the following slot is still ahead',
      f: facts({ schedule: 'every 1m', slot: '2026-11-20T00:01:00.000Z' }),
      now: '2026-11-20T00:01:59.999Z',
      plan: { nextRun: at('2026-11-20T00:02:00.000Z'), coalesced: false, action: 'submit', replaceOpen: false, submission: submit('2026-11-20T00:01:00.000Z', 30_000) },
    },
    {
      name: 'cron: the timebox is half the gap to the following occurrence (Mon and Fri at 09:00: Fri → Mon is 3 days)',
      f: facts({ schedule: '0 9 * * MON,FRI', slot: '2026-11-20T09:00:00.000Z' }),
      now: '2026-11-20T09:00:00.050Z',
      plan: { nextRun: at('2026-11-23T09:00:00.000Z'), coalesced: false, action: 'submit', replaceOpen: false, submission: submit('2026-11-20T09:00:00.000Z', 3 * 86_400_000 / 2) },
    },
    {
      name: 'calendar in a time zone: nextRun is the next local 09:00 (Europe/Berlin, UTC+1 in November)',
      f: facts({ schedule: '*-*-* 09:00', timezone: 'Europe/Berlin', slot: '2026-11-20T08:00:00.000Z' }),
      now: '2026-11-20T08:00:00.000Z',
      plan: { nextRun: at('2026-11-21T08:00:00.000Z'), coalesced: false, action: 'submit', replaceOpen: false, submission: submit('2026-11-20T08:00:00.000Z', 43_200_000) },
    },
    {
      name: 'a schedule that never fires again: nextRun null, the last slot still runs',
      f: facts({ schedule: '2026-11-20 09:00:00', slot: '2026-11-20T09:00:00.000Z', timebox: 60_000 }),
      now: '2026-11-20T09:00:01.000Z',
      plan: { nextRun: null, coalesced: false, action: 'submit', replaceOpen: false, submission: submit('2026-11-20T09:00:00.000Z', 60_000) },
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(planDueRun(c.f, at(c.now))).toEqual(c.plan);
    });
  }
});
