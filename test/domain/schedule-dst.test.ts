import { describe, expect, it } from 'vitest';
import { parseSchedule } from '../../src/domain/schedule/index.js';
import { nextTimes } from './schedule-helpers.js';

// Europe/Berlin springs forward on 2026-03-29: 02:00 CET (01:00Z) becomes 03:00 CEST.
// America/New_York falls back on 2026-11-01: 02:00 EDT (06:00Z) becomes 01:00 EST, so 01:00–01:59 happens twice.

describe.each([
  ['cron', '30 2 * * *', '0 * * * *', '30 1 * * *', '*/30 * * * *'],
  ['calendar', '*-*-* 02:30', 'hourly', '*-*-* 01:30', '*:0/30'],
])('%s schedules across DST changes', (_kind, dailyAt0230, hourly, dailyAt0130, halfHourly) => {
  it('skip a local time that does not exist on the spring-forward day', () => {
    expect(nextTimes(dailyAt0230, '2026-03-27T00:00:00.000Z', 4, 'Europe/Berlin')).toEqual([
      '2026-03-27T01:30:00.000Z', // 02:30 CET
      '2026-03-28T01:30:00.000Z', // 02:30 CET
      // 2026-03-29 02:30 does not exist
      '2026-03-30T00:30:00.000Z', // 02:30 CEST
      '2026-03-31T00:30:00.000Z',
    ]);
  });

  it('go straight from 01:00 to 03:00 local when the clocks spring forward', () => {
    expect(nextTimes(hourly, '2026-03-28T23:30:00.000Z', 3, 'Europe/Berlin')).toEqual([
      '2026-03-29T00:00:00.000Z', // 01:00 CET
      '2026-03-29T01:00:00.000Z', // 03:00 CEST
      '2026-03-29T02:00:00.000Z', // 04:00 CEST
    ]);
  });

  it('fire a repeated local time once, at its first occurrence, when the clocks fall back', () => {
    expect(nextTimes(dailyAt0130, '2026-10-30T00:00:00.000Z', 4, 'America/New_York')).toEqual([
      '2026-10-30T05:30:00.000Z', // 01:30 EDT
      '2026-10-31T05:30:00.000Z', // 01:30 EDT
      '2026-11-01T05:30:00.000Z', // 01:30 EDT (first of two)
      '2026-11-02T06:30:00.000Z', // 01:30 EST
    ]);
  });

  it('do not repeat the 01:00 hour on the fall-back night', () => {
    expect(nextTimes(halfHourly, '2026-11-01T04:00:00.000Z', 6, 'America/New_York')).toEqual([
      '2026-11-01T04:30:00.000Z', // 00:30 EDT
      '2026-11-01T05:00:00.000Z', // 01:00 EDT
      '2026-11-01T05:30:00.000Z', // 01:30 EDT
      // 01:00 and 01:30 EST (06:00Z, 06:30Z) already happened
      '2026-11-01T07:00:00.000Z', // 02:00 EST
      '2026-11-01T07:30:00.000Z',
      '2026-11-01T08:00:00.000Z',
    ]);
  });

  it('skip the rest of the repeated hour when asked from inside its second pass', () => {
    const s = parseSchedule(halfHourly, 'America/New_York');
    expect(s.next(new Date('2026-11-01T06:15:00.000Z'))?.toISOString()).toBe('2026-11-01T07:00:00.000Z'); // from 01:15 EST
    expect(s.next(new Date('2026-11-01T05:45:00.000Z'))?.toISOString()).toBe('2026-11-01T07:00:00.000Z'); // from 01:45 EDT
  });

  it('keep firing at the same local time after the change', () => {
    expect(nextTimes(dailyAt0130, '2026-11-05T00:00:00.000Z', 1, 'America/New_York')).toEqual(['2026-11-05T06:30:00.000Z']);
    expect(nextTimes(dailyAt0230, '2026-10-24T00:00:00.000Z', 3, 'Europe/Berlin')).toEqual([
      '2026-10-24T00:30:00.000Z', // 02:30 CEST
      '2026-10-25T00:30:00.000Z', // 02:30 CEST, first of two on the fall-back day
      '2026-10-26T01:30:00.000Z', // 02:30 CET
    ]);
  });
});

describe('DST edge cases', () => {
  it('skip a spring-forward gap at second precision', () => {
    expect(nextTimes('*:*:0/20', '2026-03-29T00:59:30.000Z', 3, 'Europe/Berlin')).toEqual([
      '2026-03-29T00:59:40.000Z', // 01:59:40 CET
      '2026-03-29T01:00:00.000Z', // 03:00:00 CEST
      '2026-03-29T01:00:20.000Z',
    ]);
  });

  it('handle zones with half-hour DST (Australia/Lord_Howe, 02:00 → 02:30 on 2026-10-04)', () => {
    // 02:00–02:29 local do not exist on 2026-10-04; 02:15 is skipped that day.
    expect(nextTimes('15 2 * * *', '2026-10-02T12:00:00.000Z', 3, 'Australia/Lord_Howe')).toEqual([
      '2026-10-02T15:45:00.000Z', // 2026-10-03 02:15 +10:30
      '2026-10-04T15:15:00.000Z', // 2026-10-05 02:15 +11:00
      '2026-10-05T15:15:00.000Z',
    ]);
  });

  it('handle a day skipped entirely (Pacific/Apia, 2011-12-30 did not exist)', () => {
    expect(nextTimes('0 12 * * *', '2011-12-28T12:00:00.000Z', 3, 'Pacific/Apia')).toEqual([
      '2011-12-28T22:00:00.000Z', // 2011-12-28 12:00 −10:00
      '2011-12-29T22:00:00.000Z', // 2011-12-29 12:00 −10:00
      '2011-12-30T22:00:00.000Z', // 2011-12-31 12:00 +14:00
    ]);
  });

  it('notice daylight-saving stretches shorter than a week (America/Recife, October 2000)', () => {
    // −03:00, then −02:00 from 2000-10-08 to 2000-10-15, then −03:00 again.
    expect(nextTimes('0 12 * * *', '2000-10-06T00:00:00.000Z', 11, 'America/Recife').map((t) => t.slice(5, 16))).toEqual([
      '10-06T15:00',
      '10-07T15:00',
      '10-08T14:00',
      '10-09T14:00',
      '10-10T14:00',
      '10-11T14:00',
      '10-12T14:00',
      '10-13T14:00',
      '10-14T14:00',
      '10-15T15:00',
      '10-16T15:00',
    ]);
  });
});
