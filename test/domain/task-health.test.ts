import { describe, expect, it } from 'vitest';
import { parseSchedule } from '../../src/domain/schedule/index.js';
import { type HealthFacts, healthOf, overdueAtOf } from '../../src/domain/task-health.js';

const at = (iso: string) => new Date(iso);
const NOW = at('2026-11-20T12:00:00.000Z');
const facts: HealthFacts = { enabled: true, lastSuccessAt: null, lastFailureAt: null, consecutiveFailures: 0, overdueAt: null };

describe('healthOf: the first of disabled, overdue, failing that holds, else ok', () => {
  const cases: [string, Partial<HealthFacts>, string][] = [
    ['nothing happened yet', {}, 'ok'],
    ['a run failed', { consecutiveFailures: 1 }, 'failing'],
    ['overdue from this very moment', { overdueAt: NOW }, 'overdue'],
    ['overdue in a millisecond', { overdueAt: new Date(NOW.getTime() + 1) }, 'ok'],
    ['failing and overdue', { consecutiveFailures: 3, overdueAt: at('2026-11-20T11:00:00.000Z') }, 'overdue'],
    ['disabled wins over everything', { enabled: false, consecutiveFailures: 3, overdueAt: at('2026-11-20T11:00:00.000Z') }, 'disabled'],
  ];
  for (const [name, f, status] of cases) {
    it(`${name}: ${status}`, () => expect(healthOf({ ...facts, ...f }, NOW).status).toBe(status));
  }
});

describe('overdueAtOf: alertAfter past the first slot due after the last success (or creation)', () => {
  const hourly = { schedule: parseSchedule('every 1h', 'UTC'), createdAt: at('2026-11-20T00:00:00.000Z'), firstRunAt: null, endAt: null };
  it('never without alertAfter', () => expect(overdueAtOf({ ...hourly, alertAfter: null, lastSuccessAt: null })).toBeNull());
  it('from creation: the first slot + alertAfter', () =>
    expect(overdueAtOf({ ...hourly, alertAfter: 2 * 3_600_000, lastSuccessAt: null })).toEqual(at('2026-11-20T03:00:00.000Z')));
  it('after a success: the next slot after it + alertAfter', () =>
    expect(overdueAtOf({ ...hourly, alertAfter: 600_000, lastSuccessAt: at('2026-11-20T05:00:00.000Z') })).toEqual(
      at('2026-11-20T06:10:00.000Z'),
    ));
  it('a firstRunAt at creation counts as the first slot', () =>
    expect(overdueAtOf({ ...hourly, firstRunAt: hourly.createdAt, alertAfter: 60_000, lastSuccessAt: null })).toEqual(
      at('2026-11-20T00:01:00.000Z'),
    ));
  it('none when endAt comes before the next slot', () =>
    expect(
      overdueAtOf({ ...hourly, endAt: at('2026-11-20T06:00:00.000Z'), alertAfter: 60_000, lastSuccessAt: at('2026-11-20T05:00:00.000Z') }),
    ).toBeNull());
});
