import { describe, expect, it } from 'vitest';
import type { LeasedInSlot, LeaseResult, LeaseSlot } from '../../src/repositories/jobs.js';
import { LeaseCombiner, type LeaseFilter } from '../../src/services/lease-combiner.js';

/** A fake claim: hands out numbered jobs from a queue, and lets the test hold a claim open. */
class FakeClaims {
  next = 1;
  remaining = Number.POSITIVE_INFINITY;
  /** Jobs to drop (by number) the first time they come up, as the periodic drop check would. */
  drop = new Set<number>();
  readonly calls: { filter: LeaseFilter; slots: LeaseSlot[] }[] = [];
  private gates: (() => void)[] = [];
  hold = false;
  failWith: Error | null = null;

  readonly claim = async (filter: LeaseFilter, slots: LeaseSlot[]): Promise<LeaseResult> => {
    this.calls.push({ filter, slots: [...slots] });
    if (this.hold) await new Promise<void>((resolve) => this.gates.push(resolve));
    if (this.failWith) throw this.failWith;
    const leased: LeasedInSlot[] = [];
    const dropped: LeaseResult['dropped'] = [];
    // as the real statement: one candidate per slot; a dropped candidate leaves its slot empty
    let slot = 0;
    for (let k = 0; k < slots.length && this.remaining > 0; k++) {
      const n = this.next++;
      this.remaining--;
      if (this.drop.delete(n)) {
        dropped.push({ id: String(n), taskId: 't', error: null });
        continue;
      }
      leased.push({ id: String(n), worker: slots[slot]!.worker, slot } as LeasedInSlot);
      slot++;
    }
    return { leased, dropped };
  };

  release(): void {
    this.hold = false;
    for (const g of this.gates.splice(0)) g();
  }
}

const turn = async () => {
  for (let i = 0; i < 3; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};
const ids = (jobs: { id: string }[]) => jobs.map((j) => j.id);
const ask = (worker: string, limit = 1) => ({ worker, limit, leaseMs: 30_000 });
const options = { maxSlots: 500, maxInFlight: 1, maxRounds: 5 };

describe('LeaseCombiner', () => {
  it('claims the requests of one turn in one statement, each its own slots, oldest request first', async () => {
    const f = new FakeClaims();
    const c = new LeaseCombiner(f.claim, options);
    const a = c.lease({ types: ['x'] }, ask('a', 2));
    const b = c.lease({ types: ['x'] }, ask('b', 1));
    expect(ids(await a)).toEqual(['1', '2']);
    expect(ids(await b)).toEqual(['3']);
    expect(f.calls).toHaveLength(1);
    expect(f.calls[0]!.slots.map((s) => s.worker)).toEqual(['a', 'a', 'b']);
  });

  it('keeps filters apart: different types never share a claim', async () => {
    const f = new FakeClaims();
    const c = new LeaseCombiner(f.claim, options);
    await Promise.all([c.lease({ types: ['x'] }, ask('a')), c.lease({ types: ['y'] }, ask('b')), c.lease({ types: ['x'] }, ask('c'))]);
    expect(f.calls.map((x) => [x.filter.types, x.slots.length])).toEqual([
      [['x'], 2],
      [['y'], 1],
    ]);
  });

  it('queues requests that arrive while maxInFlight claims run, and sends them together next', async () => {
    const f = new FakeClaims();
    f.hold = true;
    const c = new LeaseCombiner(f.claim, options);
    const first = c.lease({}, ask('a'));
    await turn();
    const later = [c.lease({}, ask('b')), c.lease({}, ask('c')), c.lease({}, ask('d'))];
    await turn();
    expect(f.calls).toHaveLength(1);
    expect(c.pending).toBe(3);
    f.release();
    await first;
    const got = await Promise.all(later);
    expect(f.calls.map((x) => x.slots.map((s) => s.worker))).toEqual([['a'], ['b', 'c', 'd']]);
    expect(got.map(ids)).toEqual([['2'], ['3'], ['4']]);
  });

  it('claims a large ask (≥ soloLimit) on its own at once, outside the queue and the in-flight limit', async () => {
    const f = new FakeClaims();
    f.hold = true;
    const c = new LeaseCombiner(f.claim, { ...options, soloLimit: 100 });
    const small = c.lease({}, ask('small'));
    await turn();
    const big = c.lease({}, ask('big', 100));
    await turn();
    expect(f.calls.map((x) => x.slots.length)).toEqual([1, 100]); // both in flight despite maxInFlight 1
    f.release();
    expect(await small).toHaveLength(1);
    expect(await big).toHaveLength(100);
  });

  it('splits queued requests into claims of at most maxSlots', async () => {
    const f = new FakeClaims();
    const c = new LeaseCombiner(f.claim, { ...options, maxSlots: 3, maxInFlight: 4 });
    await Promise.all([c.lease({}, ask('a', 2)), c.lease({}, ask('b', 2)), c.lease({}, ask('c', 1))]);
    expect(f.calls.map((x) => x.slots.map((s) => s.worker))).toEqual([
      ['a', 'a'],
      ['b', 'b', 'c'],
    ]);
  });

  it('claims again for slots the drop check emptied, up to maxRounds', async () => {
    const f = new FakeClaims();
    f.drop = new Set([2, 3]);
    const c = new LeaseCombiner(f.claim, options);
    expect(ids(await c.lease({}, ask('a', 3)))).toEqual(['1', '4', '5']);
    expect(f.calls.map((x) => x.slots.length)).toEqual([3, 2]); // the second claim only for the two emptied slots
    const g = new FakeClaims();
    g.remaining = 2;
    const d = new LeaseCombiner(g.claim, options);
    expect(ids(await d.lease({}, ask('b', 3)))).toEqual(['1', '2']); // fewer jobs than asked: no second round
    expect(g.calls).toHaveLength(1);
  });

  it('fails the requests of a failed claim, and goes on with the next', async () => {
    const f = new FakeClaims();
    f.failWith = new Error('connection terminated');
    const c = new LeaseCombiner(f.claim, options);
    await expect(c.lease({}, ask('a'))).rejects.toThrow('connection terminated');
    f.failWith = null;
    expect(ids(await c.lease({}, ask('b')))).toEqual(['1']);
  });
});
