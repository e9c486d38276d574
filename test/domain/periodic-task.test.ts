import { describe, expect, it } from 'vitest';
import { DomainError } from '../../src/domain/errors.js';
import {
  defaultTolerance,
  effectiveTimebox,
  firstRunFrom,
  gapBefore,
  nextRunAfter,
  parseTiming,
  ScheduleCache,
  viewOf,
  type PeriodicTask,
} from '../../src/domain/periodic-task.js';
import { parseSchedule } from '../../src/domain/schedule/index.js';

const d = (iso: string) => new Date(iso);
const T0 = d('2026-11-20T00:00:00.000Z');

function errorOf(fn: () => unknown): DomainError {
  try {
    fn();
  } catch (e) {
    if (e instanceof DomainError) return e;
    throw e;
  }
  throw new Error('expected a DomainError');
}

describe('defaults', () => {
  it('makes the default tolerance a tenth of the interval, at most 5 s', () => {
    expect(defaultTolerance(1_000)).toBe(100);
    expect(defaultTolerance(30_000)).toBe(3_000);
    expect(defaultTolerance(50_000)).toBe(5_000);
    expect(defaultTolerance(3_600_000)).toBe(5_000);
  });

  it('makes the default timebox half the interval', () => {
    expect(effectiveTimebox({ schedule: parseSchedule('every 6m'), timebox: null }, T0)).toBe(180_000);
    expect(effectiveTimebox({ schedule: parseSchedule('every 6m'), timebox: 1_000 }, T0)).toBe(1_000);
  });

  it('makes the default timebox of a cron schedule half the time from the slot to the following occurrence', () => {
    const s = parseSchedule('0 9,10,14 * * *');
    expect(effectiveTimebox({ schedule: s, timebox: null }, d('2026-11-20T09:00:00Z'))).toBe(30 * 60_000);
    expect(effectiveTimebox({ schedule: s, timebox: null }, d('2026-11-20T10:00:00Z'))).toBe(2 * 3_600_000);
    expect(effectiveTimebox({ schedule: s, timebox: null }, d('2026-11-20T14:00:00Z'))).toBe(9.5 * 3_600_000);
  });
});

describe('gapBefore', () => {
  it('is the interval of an interval schedule', () => {
    expect(gapBefore(parseSchedule('every 90s'), T0)).toBe(90_000);
  });

  it('finds the occurrence before a cron slot', () => {
    const weekdays = parseSchedule('0 9 * * 1-5');
    expect(gapBefore(weekdays, d('2026-11-23T09:00:00Z'))).toBe(3 * 86_400_000); // Monday after Friday
    expect(gapBefore(weekdays, d('2026-11-20T09:00:00Z'))).toBe(86_400_000); // Friday after Thursday
    const irregular = parseSchedule('0 9,10,14 * * *');
    expect(gapBefore(irregular, d('2026-11-20T09:00:00Z'))).toBe(19 * 3_600_000);
    expect(gapBefore(irregular, d('2026-11-20T14:00:00Z'))).toBe(4 * 3_600_000);
    const seconds = parseSchedule('*/7 * * * * *');
    expect(gapBefore(seconds, d('2026-11-20T00:01:07Z'))).toBe(7_000);
    expect(gapBefore(seconds, d('2026-11-20T00:01:00Z'))).toBe(4_000); // :56 → :00
  });

  it('finds the occurrence before a slot of a calendar event across months', () => {
    expect(gapBefore(parseSchedule('monthly'), d('2026-03-01T00:00:00Z'))).toBe(28 * 86_400_000);
  });
});

describe('nextRun', () => {
  const every = parseSchedule('every 6m offset 1m');
  const timing = { schedule: every, createdAt: T0, firstRunAt: null };

  it('starts an interval one interval plus offset after creation', () => {
    expect(firstRunFrom(timing, T0)).toEqual(d('2026-11-20T00:07:00Z'));
  });

  it('starts at firstRunAt when given, or at the first slot of it at or after now', () => {
    const f = { schedule: parseSchedule('every 100m'), createdAt: T0, firstRunAt: d('2026-11-20T00:30:00Z') };
    expect(firstRunFrom(f, T0)).toEqual(d('2026-11-20T00:30:00Z'));
    expect(firstRunFrom(f, d('2026-11-20T00:30:00Z'))).toEqual(d('2026-11-20T00:30:00Z'));
    expect(firstRunFrom(f, d('2026-11-20T00:30:00.001Z'))).toEqual(d('2026-11-20T02:10:00Z'));
  });

  it('moves past now after a run, coalescing every missed slot', () => {
    expect(nextRunAfter(timing, d('2026-11-20T00:07:00Z'), d('2026-11-20T00:07:00.010Z'))).toEqual(d('2026-11-20T00:13:00Z'));
    expect(nextRunAfter(timing, d('2026-11-20T00:07:00Z'), d('2026-11-20T01:00:00Z'))).toEqual(d('2026-11-20T01:01:00Z'));
    expect(nextRunAfter(timing, d('2026-11-20T00:07:00Z'), d('2026-11-20T01:01:00Z'))).toEqual(d('2026-11-20T01:07:00Z'));
  });

  it('is null when the schedule never fires again', () => {
    const s = parseSchedule('2026-11-20 09:00:00');
    expect(nextRunAfter({ schedule: s, createdAt: T0, firstRunAt: null }, d('2026-11-20T09:00:00Z'), d('2026-11-20T09:00:01Z'))).toBeNull();
  });
});

describe('parseTiming', () => {
  const input = { schedule: 'every 1m', timezone: 'UTC', firstRunAt: null, tolerance: null, timebox: null };

  it('reads durations written either way', () => {
    expect(parseTiming({ ...input, tolerance: 'PT2S', timebox: '1m30s' }, T0, T0)).toMatchObject({ tolerance: 2_000, timebox: 90_000 });
    expect(parseTiming({ ...input, tolerance: 2_000, timebox: 90_000 }, T0, T0)).toMatchObject({ tolerance: 2_000, timebox: 90_000 });
  });

  it('refuses a tolerance that is not below the interval', () => {
    expect(errorOf(() => parseTiming({ ...input, tolerance: '1m' }, T0, T0)).errors).toEqual([
      { path: '/tolerance', message: 'tolerance 1m must be below the interval (1m)' },
    ]);
    expect(parseTiming({ ...input, tolerance: '59s' }, T0, T0).tolerance).toBe(59_000);
  });

  it('checks the tolerance of a cron schedule against its shortest gap', () => {
    const cron = { ...input, schedule: '0 9,10,14 * * *' };
    expect(errorOf(() => parseTiming({ ...cron, tolerance: '2h' }, T0, T0)).errors[0]!.path).toBe('/tolerance');
    expect(parseTiming({ ...cron, tolerance: '59m' }, T0, T0).tolerance).toBe(59 * 60_000);
  });

  it('refuses a zero timebox', () => {
    expect(errorOf(() => parseTiming({ ...input, timebox: '0s' }, T0, T0)).errors[0]!.path).toBe('/timebox');
  });

  it('keeps the schedule engine error of a lone bad schedule', () => {
    const e = errorOf(() => parseTiming({ ...input, schedule: '* * * * 8' }, T0, T0));
    expect(e.code).toBe('invalid_schedule');
    expect(e.errors[0]!.path).toBe('/schedule');
  });

  it('names every bad field at once', () => {
    const e = errorOf(() => parseTiming({ ...input, schedule: 'every x', timezone: 'No/Where', timebox: 'long' }, T0, T0));
    expect(e.errors.map((x) => x.path).sort()).toEqual(['/schedule', '/timebox', '/timezone']);
  });
});

describe('viewOf', () => {
  const task: PeriodicTask = {
    id: 'x',
    task: 't',
    group: 'default',
    args: null,
    subject: null,
    submitter: null,
    priority: 0,
    owner: null,
    enabled: true,
    schedule: 'every 20s',
    timezone: 'UTC',
    firstRunAt: null,
    tolerance: null,
    timebox: null,
    concurrencyPolicy: 'forbid',
    misfirePolicy: 'coalesce',
    catchUpLimit: 10,
    maxAttempts: 1,
    catchUpWindow: null,
    endAt: null,
    alertAfter: null,
    lastSuccessAt: null,
    lastFailureAt: null,
    consecutiveFailures: 0,
    overdueAt: null,
    nextRun: d('2026-11-20T00:00:20Z'),
    lastRun: null,
    worker: null,
    marked: null,
    state: null,
    createdAt: T0,
    updatedAt: T0,
  };

  it('shows the defaults in effect, and what was set as set', () => {
    const cache = new ScheduleCache();
    expect(viewOf(task, T0, cache)).toMatchObject({ tolerance: null, timebox: null, effectiveTolerance: 2_000, effectiveTimebox: 10_000 });
    expect(viewOf({ ...task, tolerance: 500, timebox: 60_000 }, T0, cache)).toMatchObject({
      effectiveTolerance: 500,
      effectiveTimebox: 60_000,
    });
  });

  it('survives a stored schedule it cannot read', () => {
    expect(viewOf({ ...task, schedule: 'nonsense' }, T0, new ScheduleCache())).toMatchObject({
      effectiveTolerance: null,
      effectiveTimebox: null,
    });
  });
});
