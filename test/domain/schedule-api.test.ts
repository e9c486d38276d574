import { describe, expect, it } from 'vitest';
import {
  FALLBACK_INTERVAL_MS,
  HORIZON_YEARS,
  intervalAt,
  occurrences,
  parseSchedule,
  SEARCH_UNTIL_YEAR,
} from '../../src/domain/schedule/index.js';

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

  it(`finds occurrences up to ${SEARCH_UNTIL_YEAR}, however far from the reference time`, () => {
    expect(parseSchedule('2057-01-01 00:00').next(new Date('2026-01-01T00:00:00.000Z'))?.toISOString()).toBe('2057-01-01T00:00:00.000Z');
    expect(parseSchedule('2199-12-31 23:59:59').next(new Date('2026-01-01T00:00:00.000Z'))?.toISOString()).toBe('2199-12-31T23:59:59.000Z');
    // systemd's own tests start in 1970 (12345 µs after the epoch).
    expect(parseSchedule('2016-03-27 03:17:00').next(new Date(12))?.toISOString()).toBe('2016-03-27T03:17:00.000Z');
    expect(parseSchedule('2016-02~01 UTC').next(new Date(12))?.getTime()).toBe(1_456_704_000_000);
    expect(parseSchedule('Mon 2017-05~07/1 UTC').next(new Date(12))?.getTime()).toBe(1_496_016_000_000);
  });

  it(`looks a whole ${HORIZON_YEARS}-year Gregorian cycle ahead, and gives up (null) once a schedule has ended`, () => {
    // The fifth Monday of February exists only when Feb 29 is a Monday: 2044, 2072, 2112 (not 2100).
    const rare = parseSchedule('0 0 ? 2 MON#5');
    expect(occurrences(rare, { after: new Date('2072-03-01T00:00:00.000Z'), count: 2 }).map((d) => d.toISOString())).toEqual([
      '2112-02-29T00:00:00.000Z',
      '2140-02-29T00:00:00.000Z',
    ]);
    expect(rare.next(new Date('2300-01-01T00:00:00.000Z'))?.toISOString()).toBe('2304-02-29T00:00:00.000Z');
    expect(parseSchedule('2150-01-01').next(new Date('2150-01-01T00:00:00.000Z'))).toBeNull();
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
