import { describe, expect, it } from 'vitest';
import { resolveGraph, startStates, topologicalOrder } from '../../src/domain/dependencies.js';
import { InvalidInputError } from '../../src/domain/errors.js';
import type { JobState } from '../../src/domain/job.js';

const isId = (s: string) => /^[1-9][0-9]*$/.test(s);
const path = (i: number) => `/jobs/${i}`;

function issues(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof InvalidInputError) return err.errors.map((e) => e.path);
    throw err;
  }
  throw new Error('no error');
}

describe('resolveGraph', () => {
  it('reads refs of the batch and ids of existing jobs, each once, in an order that respects them', () => {
    const g = resolveGraph([{ after: ['b', '17', 'b'] }, { ref: 'b', after: ['c'] }, { ref: 'c', after: ['17', '18'] }], isId, path);
    expect(g.inBatch).toEqual([[1], [2], []]);
    expect(g.existing).toEqual([['17'], [], ['17', '18']]);
    expect(g.existingIds.sort()).toEqual(['17', '18']);
    expect(g.named).toEqual([[1, '17'], [2], ['17', '18']]);
    expect(g.order).toEqual([2, 1, 0]);
  });

  it('names the body of a duplicate ref, a ref like an id, an unknown ref and a cycle', () => {
    expect(issues(() => resolveGraph([{ ref: 'a' }, { ref: 'a' }], isId, path))).toEqual(['/jobs/1/ref']);
    expect(issues(() => resolveGraph([{ ref: '7' }], isId, path))).toEqual(['/jobs/0/ref']);
    expect(issues(() => resolveGraph([{ ref: 'a' }, { after: ['a', 'zz'] }], isId, path))).toEqual(['/jobs/1/after/1']);
    expect(issues(() => resolveGraph([{ ref: 'x' }, { ref: 'a', after: ['b'] }, { ref: 'b', after: ['a'] }], isId, path))).toEqual([
      '/jobs/1/after',
    ]);
  });
});

describe('topologicalOrder', () => {
  it('leaves out the nodes on a cycle and those after them', () => {
    expect(topologicalOrder([[], [0], [3], [2], [2]]).sort()).toEqual([0, 1]);
  });
});

describe('startStates', () => {
  const states = new Map<string, JobState>([
    ['1', 'finished'],
    ['2', 'running'],
    ['3', 'failed'],
  ]);
  const idOf = (i: number) => `n${i}`;

  it('queues after finished jobs, waits for open ones, counting them', () => {
    const bodies = [{ after: ['1'] }, { after: ['1', '2'] }, { ref: 'a' }, { after: ['a', '2'] }];
    const g = resolveGraph(bodies, isId, path);
    expect(startStates(g, bodies, states, idOf).map((s) => [s.state, s.pending])).toEqual([
      ['queued', 0],
      ['waiting', 1],
      ['queued', 0],
      ['waiting', 2],
    ]);
  });

  it('cancels after a failed job, down the batch, unless onDependencyFailure is run', () => {
    const bodies = [
      { ref: 'a', after: ['3'] },
      { ref: 'b', after: ['a'] },
      { after: ['b'], onDependencyFailure: 'run' as const },
      { after: ['3', '2'], onDependencyFailure: 'run' as const },
    ];
    const g = resolveGraph(bodies, isId, path);
    expect(startStates(g, bodies, states, idOf)).toEqual([
      { state: 'cancelled', pending: 0, failedDependency: '3' },
      { state: 'cancelled', pending: 0, failedDependency: 'n0' },
      { state: 'queued', pending: 0, failedDependency: null },
      { state: 'waiting', pending: 1, failedDependency: null },
    ]);
  });
});
