import { describe, expect, it } from 'vitest';
import { parseSchedule } from '../../src/domain/schedule/index.js';
import { nextTimes } from './schedule-helpers.js';

const at = (...days: string[]) => days.map((d) => (d.includes('T') ? `${d}.000Z` : `${d}T00:00:00.000Z`));

// Expected values follow the documentation of the tool each form comes from: Quartz's CronTrigger
// tutorial and croner's README (L, W, #), crontab(5) (weekday steps), systemd.time(7) (time zones).
describe('cron L, W and # (Quartz, croner)', () => {
  it('L in day-of-month is the last day of the month', () => {
    expect(nextTimes('0 0 L * *', '2026-01-01T00:00:00Z', 4)).toEqual(at('2026-01-31', '2026-02-28', '2026-03-31', '2026-04-30'));
    expect(nextTimes('0 0 L 2 *', '2027-03-01T00:00:00Z', 2)).toEqual(at('2028-02-29', '2029-02-28'));
  });

  it('L-n is n days before the last day', () => {
    expect(nextTimes('0 0 L-2 * *', '2026-01-01T00:00:00Z', 4)).toEqual(at('2026-01-29', '2026-02-26', '2026-03-29', '2026-04-28'));
    expect(nextTimes('0 0 L-0 * *', '2026-01-01T00:00:00Z', 1)).toEqual(at('2026-01-31'));
  });

  it('nL and n#L in day-of-week are the last such weekday of the month', () => {
    const lastFridays = at('2026-01-30', '2026-02-27', '2026-03-27', '2026-04-24');
    expect(nextTimes('0 0 * * 5L', '2026-01-01T00:00:00Z', 4)).toEqual(lastFridays);
    expect(nextTimes('0 0 * * FRIL', '2026-01-01T00:00:00Z', 4)).toEqual(lastFridays);
    expect(nextTimes('0 0 * * 5#L', '2026-01-01T00:00:00Z', 4)).toEqual(lastFridays);
    expect(nextTimes('0 0 * * 7L', '2026-01-01T00:00:00Z', 2)).toEqual(at('2026-01-25', '2026-02-22'));
  });

  it('n#k in day-of-week is the k-th such weekday of the month', () => {
    expect(nextTimes('0 9 * * MON#2', '2026-01-01T00:00:00Z', 4)).toEqual(
      at('2026-01-12T09:00:00', '2026-02-09T09:00:00', '2026-03-09T09:00:00', '2026-04-13T09:00:00'),
    );
    // A fifth Thursday exists in only some months.
    expect(nextTimes('0 0 * * 4#5', '2026-01-01T00:00:00Z', 3)).toEqual(at('2026-01-29', '2026-04-30', '2026-07-30'));
    // Lists mix the forms: the first and the last Monday.
    expect(nextTimes('0 0 * * 1#1,1L', '2026-01-01T00:00:00Z', 3)).toEqual(at('2026-01-05', '2026-01-26', '2026-02-02'));
  });

  it('nW is the weekday nearest the n-th, never in another month', () => {
    // 2026-02-15 is a Sunday → Monday 16th; 2026-08-15 a Saturday → Friday 14th.
    expect(nextTimes('0 0 15W * *', '2026-01-01T00:00:00Z', 4)).toEqual(at('2026-01-15', '2026-02-16', '2026-03-16', '2026-04-15'));
    expect(nextTimes('0 0 15W 8 *', '2026-01-01T00:00:00Z', 1)).toEqual(at('2026-08-14'));
    // 1W on Saturday Aug 1st moves forward to Monday the 3rd (not back into July); Sunday Nov 1st → Monday 2nd.
    expect(nextTimes('0 0 1W * *', '2026-07-01T00:00:00Z', 4)).toEqual(at('2026-08-03', '2026-09-01', '2026-10-01', '2026-11-02'));
    // 31W when the 31st is a Sunday (2026-05-31) moves back to Friday the 29th; months without a 31st are skipped.
    expect(nextTimes('0 0 31W * *', '2026-04-01T00:00:00Z', 2)).toEqual(at('2026-05-29', '2026-07-31'));
  });

  it('LW is the last weekday of the month', () => {
    expect(nextTimes('0 0 LW * *', '2026-01-01T00:00:00Z', 6)).toEqual(
      at('2026-01-30', '2026-02-27', '2026-03-31', '2026-04-30', '2026-05-29', '2026-06-30'),
    );
  });

  it('? leaves a day field unrestricted', () => {
    expect(nextTimes('0 0 ? * MON', '2026-01-01T00:00:00Z', 2)).toEqual(at('2026-01-05', '2026-01-12'));
    expect(nextTimes('0 0 1 * ?', '2026-01-01T00:00:00Z', 2)).toEqual(at('2026-02-01', '2026-03-01'));
  });

  it('a day-of-month extension and a restricted weekday match either (Vixie cron), as plain numbers do', () => {
    // The last day of the month or any Monday.
    expect(nextTimes('0 0 L * MON', '2026-01-24T00:00:00Z', 3)).toEqual(at('2026-01-26', '2026-01-31', '2026-02-02'));
  });
});

describe('cron weekday steps (crontab(5): day-of-week runs 0-7)', () => {
  it('a/n runs to 7, so 1/2 is Mon, Wed, Fri, Sun like 1-7/2', () => {
    // 2026-01-02 is a Friday.
    const monWedFriSun = at('2026-01-02', '2026-01-04', '2026-01-05', '2026-01-07', '2026-01-09', '2026-01-11');
    expect(nextTimes('0 0 * * 1/2', '2026-01-01T00:00:00Z', 6)).toEqual(monWedFriSun);
    expect(nextTimes('0 0 * * 1-7/2', '2026-01-01T00:00:00Z', 6)).toEqual(monWedFriSun);
    expect(nextTimes('0 0 * * MON/2', '2026-01-01T00:00:00Z', 6)).toEqual(monWedFriSun);
  });

  it('6/1 is Saturday and Sunday', () => {
    expect(nextTimes('0 0 * * 6/1', '2026-01-01T00:00:00Z', 4)).toEqual(at('2026-01-03', '2026-01-04', '2026-01-10', '2026-01-11'));
  });

  it('*/n is unchanged: */2 is Sun, Tue, Thu, Sat', () => {
    expect(nextTimes('0 0 * * */2', '2026-01-03T00:00:00Z', 4)).toEqual(at('2026-01-04', '2026-01-06', '2026-01-08', '2026-01-10'));
  });

  it('accepts a step as large as the field, which selects the start only', () => {
    expect(nextTimes('*/60 * * * *', '2026-01-01T00:00:00Z', 2)).toEqual(at('2026-01-01T01:00:00', '2026-01-01T02:00:00'));
    expect(nextTimes('0 0 * * */7', '2026-01-01T00:00:00Z', 2)).toEqual(at('2026-01-04', '2026-01-11'));
  });
});

describe('calendar events ending in a time zone (systemd OnCalendar=)', () => {
  it('evaluates the event in the zone written at its end', () => {
    // Monday 00:00 in Auckland (NZDT, +13) is Sunday 11:00 UTC.
    expect(nextTimes('weekly Pacific/Auckland', '2026-01-01T00:00:00Z', 2)).toEqual(at('2026-01-04T11:00:00', '2026-01-11T11:00:00'));
    // Across Berlin's spring-forward (2026-03-29): 09:00 is 08:00 UTC before, 07:00 UTC after.
    expect(nextTimes('Mon..Fri *-*-* 09:00 Europe/Berlin', '2026-03-26T00:00:00Z', 3)).toEqual(
      at('2026-03-26T08:00:00', '2026-03-27T08:00:00', '2026-03-30T07:00:00'),
    );
  });

  it('lets the written zone win over the task timezone', () => {
    expect(nextTimes('Mon..Fri *-*-* 09:00 Europe/Berlin', '2026-01-05T00:00:00Z', 1, 'America/New_York')).toEqual(
      at('2026-01-05T08:00:00'),
    );
    const s = parseSchedule('daily Asia/Tokyo', 'Europe/Berlin');
    expect(s.timezone).toBe('Asia/Tokyo');
    expect(s.next(new Date('2026-01-01T00:00:00Z'))?.toISOString()).toBe('2026-01-01T15:00:00.000Z');
  });

  it('accepts UTC in any case', () => {
    for (const utc of ['UTC', 'utc', 'uTc', 'Utc']) {
      expect(nextTimes(`*-*-* 10:00 ${utc}`, '2026-01-01T00:00:00Z', 1, 'Europe/Berlin')).toEqual(at('2026-01-01T10:00:00'));
      expect(parseSchedule(`*-*~1 ${utc}`, 'Europe/Berlin').timezone).toBe('UTC');
    }
  });

  it('keeps the task timezone when none is written', () => {
    expect(parseSchedule('daily', 'Europe/Berlin').timezone).toBe('Europe/Berlin');
    expect(nextTimes('daily', '2026-01-01T00:00:00Z', 1, 'Europe/Berlin')).toEqual(at('2026-01-01T23:00:00'));
  });

  it('applies the DST rule in the written zone: a one-off time in its gap never fires', () => {
    // systemd's test: 2017-09-24 02:30 does not exist in Auckland (clocks went 02:00 → 03:00).
    expect(() => parseSchedule('2017-09-24 02:30:00 Pacific/Auckland')).toThrow(/never fires/);
    expect(nextTimes('2017-09-24 03:30:00 Pacific/Auckland', '1970-01-01T00:00:00Z', 1)).toEqual(at('2017-09-23T14:30:00'));
  });
});

describe("systemd's calendar test vectors (src/test/test-calendarspec.c), starting in 1970", () => {
  const after = new Date(0.012345); // 12345 µs after the epoch
  it.each([
    ['2016-03-27 03:17:00', 'UTC', 1_459_048_620_000],
    ['2016-03-27 03:17:00', 'CET', 1_459_041_420_000],
    ['2016-03-27 03:17:00 UTC', 'EET', 1_459_048_620_000],
    ['Sun 16:00:00', 'CET', 1_456_066_800_000, 1_456_041_600_123],
    ['2016-02~01 UTC', 'UTC', 1_456_704_000_000],
    ['Mon 2017-05~01..07 UTC', 'UTC', 1_496_016_000_000],
    ['Mon 2017-05~07/1 UTC', 'UTC', 1_496_016_000_000],
    ['2017-08-06 9,11,13,15,17:00 UTC', 'UTC', 1_502_031_600_000, 1_502_029_800_000],
  ])('%s (TZ=%s) → %d', (source, tz, expected, from = after.getTime()) => {
    expect(parseSchedule(source, tz).next(new Date(from))?.getTime()).toBe(expected);
  });

  it('never fires on a day that does not exist, or at a local time in a DST gap', () => {
    expect(() => parseSchedule('*-04-31')).toThrow(/never fires/);
    expect(() => parseSchedule('2016-03-27 03:17:00', 'EET')).toThrow(/never fires/);
  });
});
