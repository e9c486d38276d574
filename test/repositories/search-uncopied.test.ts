/** The id ranges a search reads on job because their search rows are not copied yet (migration 0030): pure. */
import { expect, it } from 'vitest';
import { uncopied } from '../../src/repositories/job/search.js';

const r = (lo: number, hi: number) => ({ lo: String(lo), hi: String(hi) });

it('is everything from the start when nothing is copied', () => {
  expect(uncopied([], null)).toEqual([['0', null]]);
  expect(uncopied([], '700')).toEqual([['700', null]]);
});

it('leaves out the copied ranges: the gaps between them and what lies above the last', () => {
  expect(uncopied([r(0, 100), r(100, 200), r(300, 400)], null)).toEqual([
    ['200', '300'],
    ['400', null],
  ]);
  expect(uncopied([r(50, 100)], null)).toEqual([
    ['0', '50'],
    ['100', null],
  ]);
});

it('starts at stop: ranges below it are not searched, one that straddles it is cut there', () => {
  expect(uncopied([r(0, 100), r(300, 400)], '350')).toEqual([['400', null]]);
  expect(uncopied([r(0, 100), r(300, 400)], '150')).toEqual([
    ['150', '300'],
    ['400', null],
  ]);
  expect(uncopied([r(0, 100)], '100')).toEqual([['100', null]]);
});

it('reads ids past 2^53 exactly', () => {
  expect(uncopied([r(0, 1)], '9007199254740993')).toEqual([['9007199254740993', null]]);
});
