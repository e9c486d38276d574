import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BatchCommitter } from '../../src/services/batch-committer.js';

/** A write function the test completes by hand: each call waits until the test resolves or fails it. */
class ControlledWriter {
  readonly calls: { inputs: number[]; resolve: () => void; reject: (err: Error) => void }[] = [];
  readonly write = (inputs: number[]): Promise<string[]> =>
    new Promise<string[]>((resolve, reject) => {
      this.calls.push({ inputs: [...inputs], resolve: () => resolve(inputs.map((i) => `r${i}`)), reject });
    });
}

/** Lets settled promises and the setImmediate callbacks they queue run (a few event-loop turns). */
const turn = async () => {
  for (let i = 0; i < 3; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

describe('BatchCommitter (group commit of concurrent requests)', () => {
  it('writes items submitted in the same turn as one statement, each caller getting its own result', async () => {
    const w = new ControlledWriter();
    const c = new BatchCommitter(w.write, { maxBatch: 100, maxInFlight: 2 });
    const results = [1, 2, 3].map((i) => c.submit(i));
    await turn();
    expect(w.calls.map((x) => x.inputs)).toEqual([[1, 2, 3]]);
    w.calls[0]!.resolve();
    expect(await Promise.all(results)).toEqual(['r1', 'r2', 'r3']);
    expect(c.stats).toEqual({ statements: 1, items: 3, largestBatch: 3 });
  });

  it('queues items that arrive while maxInFlight statements run, and sends them together when one finishes', async () => {
    const w = new ControlledWriter();
    const c = new BatchCommitter(w.write, { maxBatch: 100, maxInFlight: 1 });
    const first = c.submit(1);
    await turn();
    const later = [2, 3, 4].map((i) => c.submit(i));
    await turn();
    expect(w.calls).toHaveLength(1); // the one statement in flight holds the others back
    expect(c.pending).toBe(3);
    w.calls[0]!.resolve();
    await first;
    await turn();
    expect(w.calls.map((x) => x.inputs)).toEqual([[1], [2, 3, 4]]);
    w.calls[1]!.resolve();
    expect(await Promise.all(later)).toEqual(['r2', 'r3', 'r4']);
  });

  it('splits a queue longer than maxBatch into statements of at most maxBatch items', async () => {
    const w = new ControlledWriter();
    const c = new BatchCommitter(w.write, { maxBatch: 2, maxInFlight: 3 });
    const all = [1, 2, 3, 4, 5].map((i) => c.submit(i));
    await turn();
    expect(w.calls.map((x) => x.inputs)).toEqual([[1, 2], [3, 4], [5]]);
    for (const call of w.calls) call.resolve();
    expect(await Promise.all(all)).toEqual(['r1', 'r2', 'r3', 'r4', 'r5']);
  });

  it('retries each item of a failed batch on its own, so one bad item fails only its own caller', async () => {
    const write = async (inputs: number[]) => {
      if (inputs.includes(13)) throw new Error(`bad item among ${inputs.join(',')}`);
      return inputs.map((i) => `r${i}`);
    };
    const c = new BatchCommitter(write, { maxBatch: 100, maxInFlight: 1 });
    const [a, bad, b] = [1, 13, 2].map((i) => c.submit(i));
    expect(await a).toBe('r1');
    await expect(bad).rejects.toThrow('bad item among 13');
    expect(await b).toBe('r2');
    expect(c.stats.statements).toBe(1); // the batch; the retries are not counted as batches
  });

  it('fails a lone item with its own error, not retried', async () => {
    let calls = 0;
    const c = new BatchCommitter<number, string>(
      async () => {
        calls++;
        throw new Error('database unavailable');
      },
      { maxBatch: 10, maxInFlight: 1 },
    );
    await expect(c.submit(1)).rejects.toThrow('database unavailable');
    expect(calls).toBe(1);
  });

  it('goes on after a failure: the next items are written', async () => {
    let fail = true;
    const c = new BatchCommitter<number, string>(
      async (inputs) => {
        if (fail) throw new Error('connection terminated');
        return inputs.map((i) => `ok${i}`);
      },
      { maxBatch: 10, maxInFlight: 1 },
    );
    await expect(c.submit(1)).rejects.toThrow('connection terminated');
    fail = false;
    expect(await c.submit(2)).toBe('ok2');
  });

  describe('overlapAfterMs: a second statement only beside a slow first one', () => {
    // the committer's timer and its clock on fake time the test moves; setImmediate stays real
    beforeEach(() => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    });
    afterEach(() => {
      vi.useRealTimers();
    });
    const setUp = () => {
      const w = new ControlledWriter();
      const c = new BatchCommitter(w.write, { maxBatch: 3, maxInFlight: 2, overlapAfterMs: 5, clock: () => Date.now() });
      return { w, c };
    };

    it('holds items back while the statement in flight is young, and sends them together when it ends', async () => {
      const { w, c } = setUp();
      const first = c.submit(1);
      await turn();
      const later = [2, 3].map((i) => c.submit(i));
      await turn();
      await vi.advanceTimersByTimeAsync(4); // 4 ms into the first statement: not slow yet
      expect(w.calls.map((x) => x.inputs)).toEqual([[1]]);
      w.calls[0]!.resolve();
      await first;
      await turn();
      expect(w.calls.map((x) => x.inputs)).toEqual([[1], [2, 3]]);
      w.calls[1]!.resolve();
      expect(await Promise.all(later)).toEqual(['r2', 'r3']);
    });

    it('starts the second statement once the first has run overlapAfterMs', async () => {
      const { w, c } = setUp();
      void c.submit(1);
      await turn();
      void c.submit(2);
      await turn();
      expect(w.calls).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(5);
      expect(w.calls.map((x) => x.inputs)).toEqual([[1], [2]]);
      void c.submit(3);
      await turn();
      await vi.advanceTimersByTimeAsync(100);
      expect(w.calls).toHaveLength(2); // maxInFlight still bounds them, however slow
      for (const call of w.calls) call.resolve();
    });

    it('does not hold back a full batch', async () => {
      const { w, c } = setUp();
      void c.submit(1);
      await turn();
      for (const i of [2, 3, 4]) void c.submit(i);
      await turn();
      expect(w.calls.map((x) => x.inputs)).toEqual([[1], [2, 3, 4]]);
      for (const call of w.calls) call.resolve();
    });
  });
});
