import { describe, expect, it } from 'vitest';
import { intervalAt, occurrences, parseSchedule } from '../../src/domain/schedule/index.js';
import { nextTimes } from './schedule-helpers.js';

const created = new Date('2026-01-01T00:00:00.000Z');
const at = (hhmm: string): string => `2026-01-01T${hhmm}:00.000Z`;

describe('interval schedules', () => {
  it.each([
    ['every 6m offset 1m', ['00:07', '00:13', '00:19']],
    ['every 4m', ['00:04', '00:08', '00:12']],
    ['every 25m offset 2m', ['00:27', '00:52', '01:17', '01:42']],
    ['every 100m', ['01:40', '03:20', '05:00']],
    ['every 1h30m', ['01:30', '03:00', '04:30']],
    ['every PT10M offset PT1M', ['00:11', '00:21', '00:31']],
    ['every 6m offset 13m', ['00:19', '00:25', '00:31']],
  ])('%j created at 00:00 runs at %j', (source, times) => {
    expect(nextTimes(source, created.toISOString(), times.length, 'UTC', { anchor: created })).toEqual(times.map(at));
  });

  it('exposes every and offset in milliseconds, and null offset fields on other kinds', () => {
    const s = parseSchedule('every 6m offset 1m');
    expect(s).toMatchObject({ kind: 'interval', everyMs: 360_000, offsetMs: 60_000, timezone: 'UTC', source: 'every 6m offset 1m' });
    expect(parseSchedule('every 5s').offsetMs).toBe(0);
    expect(parseSchedule('*/5 * * * *')).toMatchObject({ kind: 'cron', everyMs: null, offsetMs: null });
  });

  it('keeps the source exactly as written and accepts any case for the keywords', () => {
    const s = parseSchedule('  Every 5m OFFSET 1m ');
    expect(s.source).toBe('  Every 5m OFFSET 1m ');
    expect(s.everyMs).toBe(300_000);
    expect(s.offsetMs).toBe(60_000);
  });

  it('runs at firstRunAt and then every interval, ignoring the offset', () => {
    const firstRunAt = new Date('2026-01-01T00:30:00.000Z');
    expect(nextTimes('every 10m offset 3m', created.toISOString(), 3, 'UTC', { anchor: created, firstRunAt })).toEqual([
      at('00:30'),
      at('00:40'),
      at('00:50'),
    ]);
  });

  it('includes firstRunAt itself only when it is strictly after the reference time', () => {
    const firstRunAt = new Date('2026-01-01T00:30:00.000Z');
    const s = parseSchedule('every 10m');
    expect(s.next(firstRunAt, { firstRunAt })?.toISOString()).toBe(at('00:40'));
    expect(s.next(new Date(firstRunAt.getTime() - 1), { firstRunAt })?.toISOString()).toBe(at('00:30'));
  });

  it('continues the anchored grid from any later time, skipping missed runs', () => {
    const s = parseSchedule('every 6m offset 1m');
    expect(s.next(new Date('2026-01-01T10:00:00.000Z'), { anchor: created })?.toISOString()).toBe('2026-01-01T10:01:00.000Z');
    expect(s.next(new Date('2026-01-01T10:01:00.000Z'), { anchor: created })?.toISOString()).toBe('2026-01-01T10:07:00.000Z');
  });

  it('never runs at the anchor itself, even when asked from before it', () => {
    const s = parseSchedule('every 4m');
    expect(s.next(new Date('2025-12-31T00:00:00.000Z'), { anchor: created })?.toISOString()).toBe(at('00:04'));
  });

  it('prefers firstRunAt when both anchor and firstRunAt are given', () => {
    const s = parseSchedule('every 1h offset 5m');
    const firstRunAt = new Date('2026-01-01T00:17:00.000Z');
    expect(s.next(created, { anchor: created, firstRunAt })?.toISOString()).toBe(at('00:17'));
  });

  it('is absolute time: the time zone does not move runs across a DST change', () => {
    const anchor = new Date('2026-03-29T00:00:00.000Z');
    const times = nextTimes('every 1h', anchor.toISOString(), 3, 'Europe/Berlin', { anchor });
    expect(times).toEqual(['2026-03-29T01:00:00.000Z', '2026-03-29T02:00:00.000Z', '2026-03-29T03:00:00.000Z']);
  });

  it('refuses to compute occurrences without an anchor or firstRunAt (programming error)', () => {
    const s = parseSchedule('every 5m');
    expect(() => s.next(created)).toThrow(/anchor/);
  });

  it('reports everyMs as the nominal interval', () => {
    expect(intervalAt(parseSchedule('every 6m offset 1m'), created)).toBe(360_000);
  });

  // How fast this is, bench/ measures (row i).
  it('computes a thousand occurrences', () => {
    const s = parseSchedule('every 1s');
    const list = occurrences(s, { after: created, count: 1000, anchor: created });
    expect(list).toHaveLength(1000);
    expect(list[999]?.toISOString()).toBe('2026-01-01T00:16:40.000Z');
  });
});
