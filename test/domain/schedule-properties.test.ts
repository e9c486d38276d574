import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { occurrences, parseSchedule } from '../../src/domain/schedule/index.js';
import type { Schedule } from '../../src/domain/schedule/index.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

// ---------------------------------------------------------------------------------------------
// Random cron fields, generated together with the set of values they allow (so the test does not
// rely on the engine's parser to know what an expression means).

interface GenField {
  cron: string;
  calendar: string; // same meaning in systemd syntax
  values: Set<number>;
}

function fieldArb(min: number, max: number, calendarStarStep: number): fc.Arbitrary<GenField> {
  const range = (a: number, b: number, s: number): Set<number> => {
    const out = new Set<number>();
    for (let v = a; v <= b; v += s) out.add(v);
    return out;
  };
  const value = fc.integer({ min, max }).map((v) => ({ cron: `${v}`, calendar: `${v}`, values: new Set([v]) }));
  const span = fc.tuple(fc.integer({ min, max }), fc.integer({ min, max })).map(([a, b]) => (a <= b ? [a, b] : [b, a]) as [number, number]);
  const rangeItem = span.map(([a, b]) => ({ cron: `${a}-${b}`, calendar: `${a}..${b}`, values: range(a, b, 1) }));
  const rangeStep = fc
    .tuple(span, fc.integer({ min: 1, max: Math.max(1, Math.floor((max - min) / 2)) }))
    .map(([[a, b], s]) => ({ cron: `${a}-${b}/${s}`, calendar: `${a}..${b}/${s}`, values: range(a, b, s) }));
  const starStep = fc
    .integer({ min: 1, max: Math.max(1, Math.floor((max - min) / 2)) })
    .map((s) => ({ cron: `*/${s}`, calendar: `${calendarStarStep}/${s}`, values: range(min, max, s) }));
  const item = fc.oneof(value, rangeItem, rangeStep, starStep);
  const list = fc.array(fc.oneof(value, rangeItem, rangeStep), { minLength: 2, maxLength: 3 }).map((items) => ({
    cron: items.map((i) => i.cron).join(','),
    calendar: items.map((i) => i.calendar).join(','),
    values: new Set(items.flatMap((i) => [...i.values])),
  }));
  const star = fc.constant({ cron: '*', calendar: '*', values: range(min, max, 1) });
  return fc.oneof({ arbitrary: star, weight: 3 }, { arbitrary: item, weight: 3 }, { arbitrary: list, weight: 1 });
}

interface GenCron {
  text: string;
  minutes: Set<number>;
  hours: Set<number>;
  dom: Set<number>;
  months: Set<number>;
  dow: Set<number>; // 0 = Sunday
  domStar: boolean;
  dowStar: boolean;
}

const dowArb = fieldArb(0, 7, 0).map((f) => ({ ...f, values: new Set([...f.values].map((v) => (v === 7 ? 0 : v))) }));

const cronArb: fc.Arbitrary<GenCron> = fc
  .record({
    minute: fieldArb(0, 59, 0),
    hour: fieldArb(0, 23, 0),
    dom: fc.oneof(
      { arbitrary: fc.constant({ cron: '*', calendar: '*', values: new Set(Array.from({ length: 31 }, (_, i) => i + 1)) }), weight: 2 },
      { arbitrary: fieldArb(1, 31, 1), weight: 1 },
    ),
    month: fc.oneof(
      { arbitrary: fc.constant({ cron: '*', calendar: '*', values: new Set(Array.from({ length: 12 }, (_, i) => i + 1)) }), weight: 4 },
      { arbitrary: fieldArb(1, 12, 1), weight: 1 },
    ),
    dow: fc.oneof(
      { arbitrary: fc.constant({ cron: '*', calendar: '*', values: new Set([0, 1, 2, 3, 4, 5, 6]) }), weight: 2 },
      { arbitrary: dowArb, weight: 1 },
    ),
  })
  .map((f) => ({
    text: [f.minute.cron, f.hour.cron, f.dom.cron, f.month.cron, f.dow.cron].join(' '),
    minutes: f.minute.values,
    hours: f.hour.values,
    dom: f.dom.values,
    months: f.month.values,
    dow: f.dow.values,
    domStar: f.dom.cron.startsWith('*'),
    dowStar: f.dow.cron.startsWith('*'),
  }));

/** Does the spec reject at parse time? (A day-of-month/month combination that never exists.) */
function canFire(c: GenCron): boolean {
  try {
    parseSchedule(c.text);
    return true;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Brute force: walk minute by minute through real instants, read the local wall time with Intl,
// fire on a match unless that wall time was already seen (second pass of a fall-back).

const partsFormatters = new Map<string, Intl.DateTimeFormat>();
function localParts(tz: string, t: number): { y: number; mo: number; d: number; h: number; mi: number } {
  let f = partsFormatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-GB', {
      timeZone: tz,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
    });
    partsFormatters.set(tz, f);
  }
  const p: Record<string, number> = {};
  for (const x of f.formatToParts(t)) if (x.type !== 'literal') p[x.type] = Number(x.value);
  return { y: p.year as number, mo: p.month as number, d: p.day as number, h: p.hour as number, mi: p.minute as number };
}

function bruteForce(c: GenCron, tz: string, after: number, until: number): number[] {
  const seen = new Set<string>();
  const out: number[] = [];
  const start = Math.floor((after - 3 * HOUR) / MINUTE) * MINUTE;
  for (let t = start; t <= until; t += MINUTE) {
    const w =
      tz === 'UTC'
        ? (() => {
            const d = new Date(t);
            return { y: d.getUTCFullYear(), mo: d.getUTCMonth() + 1, d: d.getUTCDate(), h: d.getUTCHours(), mi: d.getUTCMinutes() };
          })()
        : localParts(tz, t);
    const key = `${w.y}-${w.mo}-${w.d} ${w.h}:${w.mi}`;
    const repeated = seen.has(key);
    seen.add(key);
    if (repeated || t <= after) continue;
    const dow = new Date(Date.UTC(w.y, w.mo - 1, w.d)).getUTCDay();
    const domOk = c.dom.has(w.d);
    const dowOk = c.dow.has(dow);
    const dayOk = c.domStar || c.dowStar ? domOk && dowOk : domOk || dowOk;
    if (c.minutes.has(w.mi) && c.hours.has(w.h) && c.months.has(w.mo) && dayOk) out.push(t);
  }
  return out;
}

function engineUntil(s: Schedule, after: number, until: number): number[] {
  const out: number[] = [];
  let t = s.next(new Date(after));
  while (t !== null && t.getTime() <= until) {
    out.push(t.getTime());
    t = s.next(t);
  }
  return out;
}

// Instants around DST changes, so random windows often contain one.
const DST_CHANGES: Record<string, string[]> = {
  'Europe/Berlin': ['2026-03-29T01:00:00Z', '2026-10-25T01:00:00Z', '2031-03-30T01:00:00Z'],
  'America/New_York': ['2026-03-08T07:00:00Z', '2026-11-01T06:00:00Z', '2030-11-03T06:00:00Z'],
  'Australia/Lord_Howe': ['2026-04-04T15:00:00Z', '2026-10-03T15:30:00Z'],
};

const aroundDst = (tz: string): fc.Arbitrary<number> =>
  fc
    .tuple(fc.constantFrom(...(DST_CHANGES[tz] as string[])), fc.integer({ min: -2 * DAY, max: DAY }), fc.integer({ min: 0, max: 999 }))
    .map(([iso, delta, ms]) => Date.parse(iso) + delta + ms);

const anyInstant = fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2060, 0, 1) });

describe('cron matches a brute-force minute-by-minute scan', () => {
  it('in UTC over three days from random times', () => {
    fc.assert(
      fc.property(cronArb.filter(canFire), anyInstant, (c, after) => {
        const until = after + 3 * DAY;
        expect(engineUntil(parseSchedule(c.text), after, until)).toEqual(bruteForce(c, 'UTC', after, until));
      }),
      { numRuns: 150 },
    );
  });

  it.each(Object.keys(DST_CHANGES))('in %s over two days around DST changes', (tz) => {
    fc.assert(
      fc.property(cronArb.filter(canFire), aroundDst(tz), (c, after) => {
        const until = after + 2 * DAY;
        expect(engineUntil(parseSchedule(c.text, tz), after, until)).toEqual(bruteForce(c, tz, after, until));
      }),
      { numRuns: 25 },
    );
  });
});

describe('calendar events agree with the equivalent cron expression', () => {
  const calendarArb = fc
    .record({
      minute: fieldArb(0, 59, 0),
      hour: fieldArb(0, 23, 0),
      dom: fieldArb(1, 31, 1),
      month: fieldArb(1, 12, 1),
      useWeekday: fc.boolean(),
      weekday: fc.constantFrom(['Mon', '1'], ['Tue..Thu', '2-4'], ['Sat,Sun', '0,6'], ['Fri', '5']),
    })
    .map((f) => ({
      // With a weekday, cron's day-of-month must be "*" to get AND semantics.
      calendar: `${f.useWeekday ? `${f.weekday[0]} ` : ''}*-${f.month.calendar}-${f.useWeekday ? '*' : f.dom.calendar} ${f.hour.calendar}:${f.minute.calendar}`,
      cron: `${f.minute.cron} ${f.hour.cron} ${f.useWeekday ? '*' : f.dom.cron} ${f.month.cron} ${f.useWeekday ? f.weekday[1] : '*'}`,
    }));

  it('in UTC and in Europe/Berlin', () => {
    fc.assert(
      fc.property(calendarArb, fc.constantFrom('UTC', 'Europe/Berlin'), anyInstant, (g, tz, after) => {
        let cron: Schedule;
        try {
          cron = parseSchedule(g.cron, tz);
        } catch {
          expect(() => parseSchedule(g.calendar, tz)).toThrow(/never fires/);
          return;
        }
        const cal = parseSchedule(g.calendar, tz);
        expect(cal.kind).toBe('calendar');
        const a = occurrences(cron, { after: new Date(after), count: 25 }).map((d) => d.toISOString());
        const b = occurrences(cal, { after: new Date(after), count: 25 }).map((d) => d.toISOString());
        expect(b).toEqual(a);
      }),
      { numRuns: 200 },
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Generic properties over all three grammars.

const scheduleArb: fc.Arbitrary<{ source: string; tz: string }> = fc.oneof(
  fc.record({
    source: fc
      .tuple(fc.integer({ min: 1, max: 100_000 }), fc.integer({ min: 0, max: 100_000 }))
      .map(([every, offset]) => `every ${every}s offset ${offset}s`),
    tz: fc.constant('UTC'),
  }),
  fc.record({
    source: cronArb.filter(canFire).map((c) => c.text),
    tz: fc.constantFrom('UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kolkata'),
  }),
  fc.record({
    source: fc.constantFrom(
      'hourly',
      'daily',
      'Mon..Fri 09:00',
      '*:0/15',
      '*-*~1 23:30',
      '*-02-29 02:30',
      'Sat,Sun *-*-1..7 *:*:0/20',
      '0 30 2 * * *',
    ),
    tz: fc.constantFrom('UTC', 'Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe'),
  }),
);

describe('every schedule', () => {
  it('returns times strictly after the reference time, in strictly increasing order', () => {
    fc.assert(
      fc.property(scheduleArb, anyInstant, anyInstant, ({ source, tz }, after, anchor) => {
        const s = parseSchedule(source, tz);
        const list = occurrences(s, { after: new Date(after), count: 20, anchor: new Date(anchor) });
        expect(list.length).toBeGreaterThan(0);
        let prev = after;
        for (const d of list) {
          expect(d.getTime()).toBeGreaterThan(prev);
          prev = d.getTime();
        }
      }),
      { numRuns: 300 },
    );
  });

  it('gives the same next time from any point before it (nothing in between is skipped)', () => {
    fc.assert(
      fc.property(scheduleArb, anyInstant, fc.double({ min: 0, max: 1, noNaN: true }), ({ source, tz }, after, frac) => {
        const s = parseSchedule(source, tz);
        const ctx = { anchor: new Date(Date.UTC(2000, 0, 1)) };
        const n = s.next(new Date(after), ctx);
        if (n === null) return;
        const between = after + Math.floor((n.getTime() - after) * frac);
        if (between >= n.getTime()) return;
        expect(s.next(new Date(between), ctx)?.toISOString()).toBe(n.toISOString());
      }),
      { numRuns: 300 },
    );
  });

  it('lands on whole seconds', () => {
    fc.assert(
      fc.property(
        scheduleArb.filter(({ source }) => !source.startsWith('every')),
        anyInstant,
        ({ source, tz }, after) => {
          const n = parseSchedule(source, tz).next(new Date(after + 0.5));
          expect(n === null || n.getTime() % 1000 === 0).toBe(true);
        },
      ),
      { numRuns: 200 },
    );
  });
});
