import { describe, expect, it } from 'vitest';
import { parseSchedule } from '../../src/domain/schedule/index.js';
import { countSlots, slotsBefore } from '../../src/domain/slots.js';

const at = (iso: string) => new Date(iso);
const ANCHOR = { anchor: at('2026-01-01T00:00:00.000Z') };

/** Every slot in [from, to) by walking next(): the oracle. */
function walk(schedule: ReturnType<typeof parseSchedule>, from: Date, to: Date): Date[] {
  const out: Date[] = [];
  for (let s = schedule.next(new Date(from.getTime() - 1), ANCHOR); s !== null && s < to; s = schedule.next(s, ANCHOR)) out.push(s);
  return out;
}

describe('slotsBefore and countSlots', () => {
  const cases = [
    ['every 1m', 'UTC'],
    ['every 7m offset 2m', 'UTC'],
    ['0 9 * * MON-FRI', 'Europe/Berlin'],
    ['*-*-* 02:30:00', 'Europe/Berlin'], // skipped once a year by DST
    ['0 0 L * *', 'UTC'],
    ['*:0/15', 'America/New_York'],
  ] as const;
  const from = at('2026-01-01T00:00:00.000Z');
  const to = at('2026-04-01T00:00:00.000Z');

  for (const [source, tz] of cases) {
    it(`pages "${source}" (${tz}) backwards as walking next() forwards does`, () => {
      const schedule = parseSchedule(source, tz);
      const all = walk(schedule, from, to);
      const paged: Date[] = [];
      let before = to;
      for (;;) {
        const page = slotsBefore(schedule, ANCHOR, before, from, 25);
        paged.push(...page);
        if (page.length < 25) break;
        before = page[page.length - 1]!;
      }
      expect(paged.map((d) => d.toISOString())).toEqual(all.reverse().map((d) => d.toISOString()));
      expect(countSlots(schedule, ANCHOR, from, new Date(to.getTime() - 1))).toBe(all.length);
    });
  }

  it('a page of a year of every-minute slots costs about a page of occurrences, not the year', () => {
    const schedule = parseSchedule('every 1m', 'UTC');
    let calls = 0;
    const counted = { ...schedule, next: (a: Date, c?: Parameters<typeof schedule.next>[1]) => (calls++, schedule.next(a, c)) };
    const page = slotsBefore(counted, ANCHOR, at('2027-01-01T00:00:00.000Z'), from, 50);
    expect(page).toHaveLength(50);
    expect(page[0]).toEqual(at('2026-12-31T23:59:00.000Z'));
    expect(calls).toBeLessThan(200);
  });

  it('stops at from, and counts nothing in an empty span', () => {
    const schedule = parseSchedule('every 1h', 'UTC');
    expect(slotsBefore(schedule, ANCHOR, at('2026-01-01T03:30:00.000Z'), at('2026-01-01T01:00:00.000Z'), 10)).toEqual([
      at('2026-01-01T03:00:00.000Z'),
      at('2026-01-01T02:00:00.000Z'),
      at('2026-01-01T01:00:00.000Z'),
    ]);
    expect(countSlots(schedule, ANCHOR, at('2026-01-01T01:00:01.000Z'), at('2026-01-01T01:59:59.000Z'))).toBe(0);
  });
});
