import { describe, expect, it } from 'vitest';
import { parseSchedule } from '../../src/domain/schedule/index.js';
import { nextTimes } from './schedule-helpers.js';

// 2026-11-20 is a Friday.
const FRI = '2026-11-20T12:00:00.000Z';

describe('systemd calendar events', () => {
  it.each([
    ['*-*-* 09:00:00', FRI, ['2026-11-21T09:00:00.000Z', '2026-11-22T09:00:00.000Z']],
    [
      'Mon..Fri *-*-* 09:00',
      FRI,
      [
        '2026-11-23T09:00:00.000Z',
        '2026-11-24T09:00:00.000Z',
        '2026-11-25T09:00:00.000Z',
        '2026-11-26T09:00:00.000Z',
        '2026-11-27T09:00:00.000Z',
        '2026-11-30T09:00:00.000Z',
      ],
    ],
    ['Mon-Fri 09:00', FRI, ['2026-11-23T09:00:00.000Z']],
    ['monday..friday 09:00', FRI, ['2026-11-23T09:00:00.000Z']],
    ['Sat,Sun 10:00', FRI, ['2026-11-21T10:00:00.000Z', '2026-11-22T10:00:00.000Z', '2026-11-28T10:00:00.000Z']],
    [
      'Mon,Wed..Thu 07:30',
      FRI,
      ['2026-11-23T07:30:00.000Z', '2026-11-25T07:30:00.000Z', '2026-11-26T07:30:00.000Z', '2026-11-30T07:30:00.000Z'],
    ],
    ['Mon *-*-* 10:00', FRI, ['2026-11-23T10:00:00.000Z', '2026-11-30T10:00:00.000Z']],
    ['Mon', FRI, ['2026-11-23T00:00:00.000Z']],
    [
      '*:0/15',
      '2026-11-20T12:01:00.000Z',
      ['2026-11-20T12:15:00.000Z', '2026-11-20T12:30:00.000Z', '2026-11-20T12:45:00.000Z', '2026-11-20T13:00:00.000Z'],
    ],
    ['0/2:00', '2026-11-20T12:01:00.000Z', ['2026-11-20T14:00:00.000Z', '2026-11-20T16:00:00.000Z']],
    ['*-*-* *:17:00', '2026-11-20T12:01:00.000Z', ['2026-11-20T12:17:00.000Z', '2026-11-20T13:17:00.000Z']],
    ['*-*-* 9..17/4:00', '2026-11-20T12:01:00.000Z', ['2026-11-20T13:00:00.000Z', '2026-11-20T17:00:00.000Z', '2026-11-21T09:00:00.000Z']],
    ['*-*-* 10:00:30', FRI, ['2026-11-21T10:00:30.000Z']],
    ['*:*:0/20', '2026-11-20T12:00:05.000Z', ['2026-11-20T12:00:20.000Z', '2026-11-20T12:00:40.000Z', '2026-11-20T12:01:00.000Z']],
    ['2026-12-24 18:00', FRI, ['2026-12-24T18:00:00.000Z']],
    ['12-24 18:00', FRI, ['2026-12-24T18:00:00.000Z', '2027-12-24T18:00:00.000Z']],
    ['2026..2027-01,07-01', FRI, ['2027-01-01T00:00:00.000Z', '2027-07-01T00:00:00.000Z']],
    ['2027/2-01-01', FRI, ['2027-01-01T00:00:00.000Z', '2029-01-01T00:00:00.000Z', '2031-01-01T00:00:00.000Z']],
  ] as const)('%j after %s runs at %j', (source, from, times) => {
    expect(nextTimes(source, from, times.length)).toEqual(times);
  });

  it('picks the first Monday of the month with a day range and a weekday', () => {
    expect(nextTimes('Mon *-*-1..7 10:00', '2026-11-20T00:00:00.000Z', 3)).toEqual([
      '2026-12-07T10:00:00.000Z',
      '2027-01-04T10:00:00.000Z',
      '2027-02-01T10:00:00.000Z',
    ]);
  });

  it.each([
    ['minutely', '*-*-* *:*:00'],
    ['hourly', '*-*-* *:00:00'],
    ['daily', '*-*-* 00:00:00'],
    ['weekly', 'Mon *-*-* 00:00:00'],
    ['monthly', '*-*-01 00:00:00'],
    ['quarterly', '*-01,04,07,10-01 00:00:00'],
    ['semiannually', '*-01,07-01 00:00:00'],
    ['yearly', '*-01-01 00:00:00'],
    ['annually', '*-01-01 00:00:00'],
    ['Daily', '*-*-* 00:00:00'],
  ])('treats the shortcut %s like %j', (shortcut, expanded) => {
    expect(nextTimes(shortcut, FRI, 4)).toEqual(nextTimes(expanded, FRI, 4));
    expect(parseSchedule(shortcut).kind).toBe('calendar');
  });

  it('runs weekly on Monday at midnight', () => {
    expect(nextTimes('weekly', FRI, 2)).toEqual(['2026-11-23T00:00:00.000Z', '2026-11-30T00:00:00.000Z']);
  });

  it('runs on Feb 29 only in leap years', () => {
    expect(nextTimes('*-02-29', '2026-01-01T00:00:00.000Z', 3)).toEqual([
      '2028-02-29T00:00:00.000Z',
      '2032-02-29T00:00:00.000Z',
      '2036-02-29T00:00:00.000Z',
    ]);
  });

  it('skips months without a 31st', () => {
    expect(nextTimes('*-*-31 12:00', '2026-01-01T00:00:00.000Z', 4)).toEqual([
      '2026-01-31T12:00:00.000Z',
      '2026-03-31T12:00:00.000Z',
      '2026-05-31T12:00:00.000Z',
      '2026-07-31T12:00:00.000Z',
    ]);
  });

  it('counts days from the end of the month with ~', () => {
    expect(nextTimes('*-*~1', '2026-01-15T00:00:00.000Z', 3)).toEqual([
      '2026-01-31T00:00:00.000Z',
      '2026-02-28T00:00:00.000Z',
      '2026-03-31T00:00:00.000Z',
    ]);
    expect(nextTimes('*-02~03', '2026-01-01T00:00:00.000Z', 3)).toEqual([
      '2026-02-26T00:00:00.000Z',
      '2027-02-26T00:00:00.000Z',
      '2028-02-27T00:00:00.000Z',
    ]);
    // The last Monday of May.
    expect(nextTimes('Mon *-05~07/1', '2026-01-01T00:00:00.000Z', 3)).toEqual([
      '2026-05-25T00:00:00.000Z',
      '2027-05-31T00:00:00.000Z',
      '2028-05-29T00:00:00.000Z',
    ]);
    // The last three days of every month.
    expect(nextTimes('*-*~1..3 08:00', '2026-04-01T00:00:00.000Z', 4)).toEqual([
      '2026-04-28T08:00:00.000Z',
      '2026-04-29T08:00:00.000Z',
      '2026-04-30T08:00:00.000Z',
      '2026-05-29T08:00:00.000Z',
    ]);
  });

  it('has no occurrence after a one-off date has passed', () => {
    const s = parseSchedule('2026-12-24 18:00');
    expect(s.next(new Date('2026-12-24T18:00:00.000Z'))).toBeNull();
  });

  it('evaluates in the given time zone', () => {
    expect(nextTimes('Mon..Fri 09:00', FRI, 2, 'Europe/Berlin')).toEqual(['2026-11-23T08:00:00.000Z', '2026-11-24T08:00:00.000Z']);
    expect(nextTimes('*-*-* 00:00', FRI, 1, 'Pacific/Chatham')).toEqual(['2026-11-21T10:15:00.000Z']); // +13:45
  });

  it('is told apart from cron and intervals by its shape', () => {
    expect(parseSchedule('Mon..Fri *-*-* 09:00').kind).toBe('calendar');
    expect(parseSchedule('*:0/15').kind).toBe('calendar');
    expect(parseSchedule('2026-12-24').kind).toBe('calendar');
    expect(parseSchedule('Sat,Sun').kind).toBe('calendar');
    expect(parseSchedule('0 9 * * Mon-Fri').kind).toBe('cron');
    expect(parseSchedule('@daily').kind).toBe('cron');
    expect(parseSchedule('every 5m').kind).toBe('interval');
  });
});
