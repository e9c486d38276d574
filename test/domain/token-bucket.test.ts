import { expect, it } from 'vitest';
import { TokenBucket } from '../../src/domain/token-bucket.js';

it('starts full, refills at its rate up to its burst, and says how long until a token', () => {
  const b = new TokenBucket(10, 3);
  expect(b.available(0)).toBe(3);
  b.take(3, 0);
  expect(b.available(0)).toBe(0);
  expect(b.msUntil(1, 0)).toBe(100);
  expect(b.available(250)).toBe(2);
  expect(b.available(10_000)).toBe(3);
  b.take(3, 10_000);
  expect(b.msUntil(2, 10_050)).toBe(150);
  // a clock that steps back refills nothing
  expect(b.available(9_000)).toBe(0);
});
