import { describe, expect, it } from 'vitest';
import { isValidTimezone, parseSchedule } from '../../src/domain/schedule/index.js';
import { DomainError } from '../../src/domain/errors.js';
import { scheduleErrorOf } from './schedule-helpers.js';

describe('bad schedules', () => {
  it.each([
    // cron
    ['61 * * * *', 'minute field "61" is out of range 0-59'],
    ['* 24 * * *', 'hour field "24" is out of range 0-23'],
    ['0 0 32 * *', 'day-of-month field "32" is out of range 1-31'],
    ['0 0 0 * *', 'day-of-month field "0" is out of range 1-31'],
    ['0 0 1 13 *', 'month field "13" is out of range 1-12'],
    ['0 0 * * 8', 'day-of-week field "8" is out of range 0-7'],
    ['0,61 * * * *', 'minute field "0,61": "61" is out of range 0-59'],
    ['60 * * * * *', 'second field "60" is out of range 0-59'],
    ['* * * *', 'expected 5 or 6 cron fields, got 4'],
    ['* * * * * * *', 'expected 5 or 6 cron fields, got 7'],
    ['* * *', 'expected 5 or 6 cron fields, got 3'],
    ['*/0 * * * *', 'step of 0'],
    ['5-2 * * * *', 'goes backwards'],
    ['0 0 * FOO *', 'unknown month name "FOO"'],
    ['0 0 * * FUN', 'unknown weekday name "FUN"'],
    ['*/61 * * * *', 'minute field "*/61" has a step of 61, larger than the field (60 values); steps go up to 60'],
    ['0 */25 * * *', 'hour field "*/25" has a step of 25'],
    ['0 0 1/32 * *', 'day-of-month field "1/32" has a step of 32'],
    ['0 0 1 */13 *', 'month field "*/13" has a step of 13'],
    ['0 0 * * */8', 'day-of-week field "*/8" has a step of 8, larger than the field (7 values)'],
    ['0 0 * * 1#6', 'day-of-week field "1#6" asks for weekday number 6 of the month; use #1 to #5'],
    ['0 0 * * 1#0', 'weekday number 0'],
    ['0 0 * * MON#', 'write it like MON#2'],
    ['0 0 * * L', 'write 5L for the last Friday'],
    ['0 0 * * 8L', 'day-of-week field "8L": "8" is out of range 0-7'],
    ['0 0 L-31 * *', 'counts back more than 30 days'],
    ['0 0 1-15W * *', 'W follows a single day'],
    ['0 0 32W * *', 'day-of-month field "32W": "32" is out of range 1-31'],
    ['0 0 L2 * *', 'write L (last day), L-2'],
    ['0 0 L/2 * *', 'cannot read "L"'],
    ['5L * * * *', 'minute field "5L": cannot read "5L"; they belong in the day-of-month and day-of-week fields'],
    ['0 0 31W 2 *', 'never fires'],
    ['0 9 * * * Europe/Berlin', 'cron expressions take no time zone ("Europe/Berlin"); set the timezone field'],
    ['0 9 * * * UTC', 'cron expressions take no time zone ("UTC")'],
    ['0 ? * * *', '"?"'],
    ['x * * * *', 'minute field "x" is not a number'],
    ['@reboot', 'unknown word "@reboot"'],
    ['0 0 30 2 *', 'schedule "0 0 30 2 *" never fires'],
    ['0 0 31 4,6,9,11 *', 'never fires'],
    // calendar
    ['*-13-01 00:00', 'month "13" is out of range 1-12 in "*-13-01 00:00"'],
    ['25:00', 'hour "25" is out of range 0-23'],
    ['*-*-* 10:60', 'minute "60" is out of range 0-59'],
    ['*-*-* 10:00:61', 'second "61" is out of range 0-59'],
    ['*-*-32', 'day "32" is out of range 1-31'],
    ['1969-01-01', 'year "1969" is out of range 1970-2199'],
    ['*-02-30', 'schedule "*-02-30" never fires'],
    ['Mon 2026-12-24', 'never fires'],
    ['Mnday 10:00', 'unknown weekday "Mnday"'],
    ['Fri..Mon 10:00', 'weekday range "Fri..Mon" goes backwards'],
    ['daily 10:00', '"daily" must stand alone'],
    ['*-*-* 10:00 Europe/Berln', 'unknown time zone "Europe/Berln" at the end of "*-*-* 10:00 Europe/Berln"'],
    ['UTC *-*-* 10:00', 'the time zone "UTC" must come last, like "*-*-* 10:00 UTC"'],
    ['*-*-* Europe/Berlin 10:00', 'the time zone "Europe/Berlin" must come last'],
    ['*-*-* 10', 'cannot read "10"'],
    ['*-*-* 10:00:00:00', 'cannot read time "10:00:00:00"'],
    ['*:0/0', 'repetition "/0" must be at least 1'],
    ['*-*-* 10:00:00.5', 'fractional seconds'],
    ['1-2-3-4', 'cannot read date "1-2-3-4"'],
    ['2026-12-24T18:00', 'separate date and time with a space'],
    ['*-*-1..7 Mon 10:00', 'the weekday "Mon" must come first, like "Mon *-*-1..7 10:00"'],
    ['Mon:Fri', 'cannot read weekday "Mon:Fri"'],
    // words
    ['fortnightly', 'unknown word "fortnightly"'],
    ['', 'schedule is empty'],
    ['   ', 'schedule is empty'],
    ['5m', '"5m" is a duration; for an interval write "every 5m"'],
    // intervals
    ['every 0s', 'interval must be at least 1s, got 0s'],
    ['every 0', 'interval must be at least 1s, got 0s'],
    ['every 500ms', 'interval must be at least 1s, got 500ms'],
    ['every PT0.5S', 'interval must be at least 1s, got 500ms'],
    ['every -5m', 'must not be negative'],
    ['every -5m offset 1m', 'must not be negative'],
    ['every 5m offset -1m', 'offset: duration "-1m" must not be negative'],
    ['every 5x', 'unknown unit "x" in "5x"'],
    ['every', '"every" needs a duration'],
    ['every 5m offset', '"offset" needs a duration'],
    ['every 5m after 1m', 'unexpected "after"'],
    ['every 1h 30m', 'without spaces'],
    ['every 5m offset 1m extra', 'unexpected "extra"'],
    ['every P1M', 'years or months'],
  ])('rejects %j, naming the offending part', (source, fragment) => {
    const err = scheduleErrorOf(source);
    expect(err.code).toBe('invalid_schedule');
    expect(err.message).toContain(fragment);
    expect(err.errors).toEqual([{ path: '/schedule', message: err.message }]);
  });

  it('rejects a one-off local time that falls in a DST gap as never firing', () => {
    const err = scheduleErrorOf('2026-03-29 02:30', 'Europe/Berlin');
    expect(err.message).toContain('never fires');
    expect(parseSchedule('2026-03-29 02:30', 'UTC').kind).toBe('calendar');
  });

  it('accepts an offset that is not shorter than the interval', () => {
    expect(parseSchedule('every 5m offset 1h').offsetMs).toBe(3_600_000);
  });
});

describe('time zones', () => {
  it('rejects an unknown time zone as invalid input at /timezone', () => {
    const err = scheduleErrorOf('daily', 'Mars/Base');
    expect(err).toBeInstanceOf(DomainError);
    expect(err.code).toBe('invalid_input');
    expect(err.errors).toEqual([{ path: '/timezone', message: 'unknown time zone "Mars/Base"; use an IANA name like Europe/Berlin' }]);
  });

  it('validates the time zone of interval schedules too', () => {
    expect(scheduleErrorOf('every 5m', 'Nowhere/Land').code).toBe('invalid_input');
  });

  it.each(['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kolkata', 'Etc/GMT+5', 'Pacific/Chatham'])('knows %s', (tz) => {
    expect(isValidTimezone(tz)).toBe(true);
    expect(parseSchedule('daily', tz).timezone).toBe(tz);
  });

  it.each(['Mars/Base', '', ' UTC', '+05:00', 'Z', 'Europe/Berlinn'])('does not know %j', (tz) => {
    expect(isValidTimezone(tz)).toBe(false);
  });

  it('defaults to UTC', () => {
    expect(parseSchedule('daily').timezone).toBe('UTC');
  });
});
