import { expect, it } from 'vitest';
import { poolSplit } from '../../src/db/database.js';

it('gives two thirds of the connections to the worker protocol and at least one to each side', () => {
  expect([1, 2, 3, 4, 10, 20, 100].map((n) => poolSplit(n))).toEqual([
    { protocol: 1, general: 1 },
    { protocol: 1, general: 1 },
    { protocol: 2, general: 1 },
    { protocol: 3, general: 1 },
    { protocol: 7, general: 3 },
    { protocol: 13, general: 7 },
    { protocol: 67, general: 33 },
  ]);
});
