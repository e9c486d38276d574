import { describe, expect, it } from 'vitest';
import { intervalAt, occurrences, parseSchedule } from '../../src/domain/schedule/index.js';
import { nextTimes } from './schedule-helpers.js';

describe('cron schedules', () => {
  it.each([
    ['*/15 * * * *', '2026-11-20T09:07:00.000Z', ['2026-11-20T09:15:00.000Z', '2026-11-20T09:30:00.000Z', '2026-11-20T09:45:00.000Z']],
    ['5-40/5 9 * * *', '2026-11-20T09:36:00.000Z', ['2026-11-20T09:40:00.000Z', '2026-11-21T09:05:00.000Z', '2026-11-21T09:10:00.000Z']],
    ['0 9 * * MON-FRI', '2026-11-20T10:00:00.000Z', ['2026-11-23T09:00:00.000Z', '2026-11-24T09:00:00.000Z', '2026-11-25T09:00:00.000Z']],
    ['0 9 * * mon-fri', '2026-11-20T10:00:00.000Z', ['2026-11-23T09:00:00.000Z', '2026-11-24T09:00:00.000Z', '2026-11-25T09:00:00.000Z']],
    ['0 12 * JAN,jul *', '2026-11-20T00:00:00.000Z', ['2027-01-01T12:00:00.000Z', '2027-01-02T12:00:00.000Z', '2027-01-03T12:00:00.000Z']],
    ['0 0 * * 7', '2026-11-20T00:00:00.000Z', ['2026-11-22T00:00:00.000Z', '2026-11-29T00:00:00.000Z']],
    ['0 0 * * 0', '2026-11-20T00:00:00.000Z', ['2026-11-22T00:00:00.000Z', '2026-11-29T00:00:00.000Z']],
    ['0 0 * * SAT-SUN', '2026-11-20T00:00:00.000Z', ['2026-11-21T00:00:00.000Z', '2026-11-22T00:00:00.000Z', '2026-11-28T00:00:00.000Z']],
    [
      '0 0 * * 5-7',
      '2026-11-19T00:00:00.000Z',
      ['2026-11-20T00:00:00.000Z', '2026-11-21T00:00:00.000Z', '2026-11-22T00:00:00.000Z', '2026-11-27T00:00:00.000Z'],
    ],
    ['0 8,12,18 * * *', '2026-11-20T10:00:00.000Z', ['2026-11-20T12:00:00.000Z', '2026-11-20T18:00:00.000Z', '2026-11-21T08:00:00.000Z']],
    ['30 */6 * * *', '2026-11-20T10:00:00.000Z', ['2026-11-20T12:30:00.000Z', '2026-11-20T18:30:00.000Z', '2026-11-21T00:30:00.000Z']],
    ['0 0 ? * 1', '2026-11-20T00:00:00.000Z', ['2026-11-23T00:00:00.000Z']],
  ])('%j after %s runs at %j', (source, from, times) => {
    expect(nextTimes(source, from, times.length)).toEqual(times);
  });

  it('supports a leading seconds field', () => {
    expect(nextTimes('*/20 * * * * *', '2026-11-20T09:00:05.000Z', 4)).toEqual([
      '2026-11-20T09:00:20.000Z',
      '2026-11-20T09:00:40.000Z',
      '2026-11-20T09:01:00.000Z',
      '2026-11-20T09:01:20.000Z',
    ]);
    expect(nextTimes('30 0 12 * * *', '2026-11-20T00:00:00.000Z', 1)).toEqual(['2026-11-20T12:00:30.000Z']);
  });

  it.each([
    ['@yearly', '0 0 1 1 *'],
    ['@annually', '0 0 1 1 *'],
    ['@monthly', '0 0 1 * *'],
    ['@weekly', '0 0 * * 0'],
    ['@daily', '0 0 * * *'],
    ['@midnight', '0 0 * * *'],
    ['@hourly', '0 * * * *'],
    ['@HOURLY', '0 * * * *'],
  ])('treats %s like %j', (shortcut, expanded) => {
    const from = '2026-11-20T10:30:00.000Z';
    expect(nextTimes(shortcut, from, 5)).toEqual(nextTimes(expanded, from, 5));
  });

  it('matches either day field when both are restricted (Vixie cron)', () => {
    // The 1st of the month OR any Monday.
    expect(nextTimes('0 0 1 * 1', '2026-01-01T00:00:00.000Z', 6)).toEqual([
      '2026-01-05T00:00:00.000Z',
      '2026-01-12T00:00:00.000Z',
      '2026-01-19T00:00:00.000Z',
      '2026-01-26T00:00:00.000Z',
      '2026-02-01T00:00:00.000Z',
      '2026-02-02T00:00:00.000Z',
    ]);
  });

  it('matches both day fields when one starts with a star', () => {
    // Every other day of the month, but only on Mondays.
    expect(nextTimes('0 0 */2 * 1', '2026-01-01T00:00:00.000Z', 3)).toEqual([
      '2026-01-05T00:00:00.000Z',
      '2026-01-19T00:00:00.000Z',
      '2026-02-09T00:00:00.000Z',
    ]);
  });

  it('runs on Feb 29 only in leap years', () => {
    expect(nextTimes('0 0 29 2 *', '2026-01-01T00:00:00.000Z', 3)).toEqual([
      '2028-02-29T00:00:00.000Z',
      '2032-02-29T00:00:00.000Z',
      '2036-02-29T00:00:00.000Z',
    ]);
  });

  it('skips months without a 31st', () => {
    expect(nextTimes('0 0 31 * *', '2026-01-01T00:00:00.000Z', 7)).toEqual([
      '2026-01-31T00:00:00.000Z',
      '2026-03-31T00:00:00.000Z',
      '2026-05-31T00:00:00.000Z',
      '2026-07-31T00:00:00.000Z',
      '2026-08-31T00:00:00.000Z',
      '2026-10-31T00:00:00.000Z',
      '2026-12-31T00:00:00.000Z',
    ]);
  });

  it('evaluates in the given time zone', () => {
    expect(nextTimes('0 9 * * *', '2026-11-20T00:00:00.000Z', 2, 'Asia/Tokyo')).toEqual([
      '2026-11-21T00:00:00.000Z',
      '2026-11-22T00:00:00.000Z',
    ]);
    expect(nextTimes('0 9 * * *', '2026-11-20T00:00:00.000Z', 1, 'Asia/Kolkata')).toEqual(['2026-11-20T03:30:00.000Z']);
  });

  it('returns the next occurrence strictly after a time that is itself an occurrence', () => {
    const s = parseSchedule('0 * * * *');
    expect(s.next(new Date('2026-11-20T10:00:00.000Z'))?.toISOString()).toBe('2026-11-20T11:00:00.000Z');
    expect(s.next(new Date('2026-11-20T09:59:59.999Z'))?.toISOString()).toBe('2026-11-20T10:00:00.000Z');
  });

  it('treats firstRunAt as a lower bound and ignores the anchor', () => {
    const s = parseSchedule('0 * * * *');
    const from = new Date('2026-11-20T10:30:00.000Z');
    expect(s.next(from, { firstRunAt: new Date('2026-11-20T15:00:00.000Z') })?.toISOString()).toBe('2026-11-20T15:00:00.000Z');
    expect(s.next(from, { firstRunAt: new Date('2026-11-20T15:00:00.001Z') })?.toISOString()).toBe('2026-11-20T16:00:00.000Z');
    expect(s.next(from, { firstRunAt: new Date('2026-11-19T00:00:00.000Z') })?.toISOString()).toBe('2026-11-20T11:00:00.000Z');
    expect(s.next(from, { anchor: new Date('2026-11-20T10:29:00.000Z') })?.toISOString()).toBe('2026-11-20T11:00:00.000Z');
  });

  it('measures the nominal interval as the gap to the next occurrence', () => {
    const s = parseSchedule('0 9,17 * * *');
    expect(intervalAt(s, new Date('2026-11-20T09:00:00.000Z'))).toBe(8 * 3_600_000);
    expect(intervalAt(s, new Date('2026-11-20T17:00:00.000Z'))).toBe(16 * 3_600_000);
  });

  // How fast this is, bench/ measures (row i); a timed assertion here would only be flaky.
  it('computes a thousand occurrences of a busy schedule across a DST change, in order', () => {
    const s = parseSchedule('*/5 * * * 1-5', 'America/New_York');
    const list = occurrences(s, { after: new Date('2026-03-06T00:00:00.000Z'), count: 1000 });
    expect(list).toHaveLength(1000);
    for (let i = 1; i < list.length; i++) expect(list[i]!.getTime()).toBeGreaterThan(list[i - 1]!.getTime());
    // Sunday 2026-03-08 02:00 EST → 03:00 EDT; runs are on weekdays only, every 5 minutes
    expect(list[0]!.toISOString()).toBe('2026-03-06T00:05:00.000Z');
  });
});
