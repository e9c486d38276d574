import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from '../../src/domain/duration.js';
import { DomainError, InvalidInputError } from '../../src/domain/errors.js';

function errorOf(fn: () => unknown): InvalidInputError {
  try {
    fn();
  } catch (e) {
    if (e instanceof InvalidInputError) return e;
    throw e;
  }
  throw new Error('expected an InvalidInputError');
}

describe('parseDuration', () => {
  it.each([
    ['500ms', 500],
    ['12s', 12_000],
    ['6m', 360_000],
    ['1h30m', 5_400_000],
    ['2d', 172_800_000],
    ['1.5h', 5_400_000],
    ['1m30s', 90_000],
    ['1d2h3m4s5ms', 93_784_005],
    ['.5s', 500],
    ['0', 0],
    ['0s', 0],
    ['+5s', 5_000],
    ['  30s ', 30_000],
  ])('reads the Go-style duration %j as %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each([
    ['PT12S', 12_000],
    ['P1DT2H', 93_600_000],
    ['PT0.5S', 500],
    ['PT0,5S', 500],
    ['P1W', 604_800_000],
    ['PT1H30M', 5_400_000],
    ['P2D', 172_800_000],
    ['pt5s', 5_000],
    ['PT0S', 0],
  ])('reads the ISO 8601 duration %j as %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each([
    ['', 'empty'],
    ['   ', 'empty'],
    ['5x', 'unknown unit "x" in "5x"; use ms, s, m, h, d or ISO 8601 like PT5S'],
    ['5', 'missing unit'],
    ['-5m', 'must not be negative'],
    ['1h 30m', 'must not contain spaces'],
    ['abc', 'cannot read "abc"'],
    ['5us', 'unknown unit "us"'],
    ['P1M', 'years or months'],
    ['P1Y', 'years or months'],
    ['P', 'not an ISO 8601 duration'],
    ['PT', 'not an ISO 8601 duration'],
    ['P1DT', 'not an ISO 8601 duration'],
    ['PT5X', 'not an ISO 8601 duration'],
    ['0.5ms', 'whole number of milliseconds'],
    ['99999999d', 'too long'],
    ['1e3s', 'unknown unit "e"'],
  ])('rejects %j with a message naming the problem', (text, fragment) => {
    const err = errorOf(() => parseDuration(text));
    expect(err).toBeInstanceOf(DomainError);
    expect(err.code).toBe('invalid_input');
    expect(err.message).toContain(fragment);
    expect(err.errors).toEqual([{ path: '/duration', message: err.message }]);
  });

  it('reports problems at the JSON path the caller names', () => {
    const err = errorOf(() => parseDuration('10 parsecs', '/timebox'));
    expect(err.errors[0]?.path).toBe('/timebox');
  });
});

describe('formatDuration', () => {
  it.each([
    [5_400_000, '1h30m'],
    [500, '500ms'],
    [172_800_000, '2d'],
    [90_000, '1m30s'],
    [0, '0s'],
    [93_784_005, '1d2h3m4s5ms'],
    [1_500, '1s500ms'],
    [-90_000, '-1m30s'],
  ])('renders %d ms as %j', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it('round-trips through parseDuration', () => {
    for (const ms of [0, 1, 999, 1_000, 61_000, 3_600_001, 90_061_001, 604_800_000]) {
      expect(parseDuration(formatDuration(ms))).toBe(ms);
    }
  });

  it('refuses non-finite input', () => {
    expect(() => formatDuration(Number.NaN)).toThrow(RangeError);
  });
});
