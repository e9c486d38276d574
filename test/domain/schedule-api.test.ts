import { describe, expect, it } from 'vitest';
import { FALLBACK_INTERVAL_MS, HORIZON_YEARS, intervalAt, occurrences, parseSchedule } from '../../src/domain/schedule/index.js';

describe('schedule API', () => {
  it('stops listing occurrences when a schedule ends', () => {
    const s = parseSchedule('2026-12-24 18:00');
    expect(occurrences(s, { after: new Date('2026-01-01T00:00:00.000Z'), count: 5 }).map((d) => d.toISOString())).toEqual([
      '2026-12-24T18:00:00.000Z',
    ]);
  });

  it('lists nothing for a count of zero and refuses a negative or fractional count', () => {
    const s = parseSchedule('daily');
    expect(occurrences(s, { after: new Date(0), count: 0 })).toEqual([]);
    expect(() => occurrences(s, { after: new Date(0), count: -1 })).toThrow(RangeError);
    expect(() => occurrences(s, { after: new Date(0), count: 1.5 })).toThrow(RangeError);
  });

  it(`gives up (null) when nothing matches within ${HORIZON_YEARS} years`, () => {
    const s = parseSchedule('2150-01-01');
    expect(s.next(new Date('2026-01-01T00:00:00.000Z'))).toBeNull();
    expect(s.next(new Date('2140-01-01T00:00:00.000Z'))?.toISOString()).toBe('2150-01-01T00:00:00.000Z');
  });

  it('falls back to one day as the nominal interval when no later occurrence exists', () => {
    const s = parseSchedule('2026-12-24 18:00');
    expect(intervalAt(s, new Date('2026-12-24T18:00:00.000Z'))).toBe(FALLBACK_INTERVAL_MS);
    expect(FALLBACK_INTERVAL_MS).toBe(86_400_000);
  });

  it('measures the nominal interval of a calendar schedule across a DST change in wall-clock-true time', () => {
    const s = parseSchedule('daily', 'Europe/Berlin');
    // Midnight 2026-03-29 (CET) to midnight 2026-03-30 (CEST) is 23 hours.
    expect(intervalAt(s, new Date('2026-03-28T23:00:00.000Z'))).toBe(23 * 3_600_000);
  });

  it('rejects an invalid reference date', () => {
    expect(() => parseSchedule('daily').next(new Date(Number.NaN))).toThrow(RangeError);
  });

  it('returns frozen schedule objects', () => {
    const s = parseSchedule('*/5 * * * *');
    expect(Object.isFrozen(s)).toBe(true);
    expect(JSON.parse(JSON.stringify(s))).toEqual({ kind: 'cron', source: '*/5 * * * *', timezone: 'UTC', everyMs: null, offsetMs: null });
  });
});
