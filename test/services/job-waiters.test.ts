import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Clock } from '../../src/clock.js';
import type { LeasedJob } from '../../src/domain/job.js';
import { JobWaiters } from '../../src/services/job-waiters.js';

/** The long-poll hub on fake timers, with a fake queue of jobs: no database, no wall clock. */

const clock: Clock = { now: () => new Date(Date.now()) };
const logger = pino({ level: 'silent' });
const job = (id: number) => ({ id: String(id) }) as LeasedJob;

/** A queue the attempts take from; counts attempts per waiter. */
class FakeQueue {
  jobs: number[] = [];
  attempts: string[] = [];
  take(who: string, limit: number): Promise<LeasedJob[]> {
    this.attempts.push(who);
    return Promise.resolve(this.jobs.splice(0, limit).map(job));
  }
}

const flush = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

let earliestCalls: number;
let earliestAnswer: Date | null;
const hub = () =>
  new JobWaiters({
    clock,
    logger,
    earliest: () => {
      earliestCalls++;
      return Promise.resolve(earliestAnswer);
    },
  });

beforeEach(() => {
  vi.useFakeTimers({ now: new Date('2026-11-20T09:00:00.000Z') });
  earliestCalls = 0;
  earliestAnswer = null;
});
afterEach(() => {
  vi.useRealTimers();
});

describe('JobWaiters', () => {
  it('answers [] when the wait passes, without asking the database anything more than once', async () => {
    const w = hub();
    const q = new FakeQueue();
    const got = w.wait({ key: 'k', limit: 1, waitMs: 30_000, attempt: () => q.take('a', 1), seenSequence: w.sequence() });
    await vi.advanceTimersByTimeAsync(29_999);
    expect(w.size).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(await got).toEqual([]);
    expect(q.attempts).toEqual([]); // idle waiting made no lease attempt
    expect(earliestCalls).toBe(1); // and asked for the next runAt once
  });

  it('wakes the oldest waiter first on a notification; one that gets nothing keeps its place', async () => {
    const w = hub();
    const q = new FakeQueue();
    const a = w.wait({ key: 'k', limit: 1, waitMs: 60_000, attempt: () => q.take('a', 1), seenSequence: w.sequence() });
    const b = w.wait({ key: 'k', limit: 1, waitMs: 60_000, attempt: () => q.take('b', 1), seenSequence: w.sequence() });
    w.notify(''); // nothing there yet (a notification may race its commit)
    await flush();
    expect(q.attempts).toEqual(['a']);
    q.jobs = [1];
    w.notify('');
    await flush();
    expect(await a).toEqual([job(1)]);
    await flush();
    // a full batch (its limit of 1) may mean more: the next waiter tries too, and finds nothing
    expect(q.attempts).toEqual(['a', 'a', 'b']);
    q.jobs = [2];
    w.notify('');
    expect(await b).toEqual([job(2)]);
  });

  it('widens the wave when a waiter gets a full batch, and stops it when one gets less', async () => {
    const w = hub();
    const q = new FakeQueue();
    const waits = ['a', 'b', 'c', 'd'].map((who) =>
      w.wait({ key: 'k', limit: 2, waitMs: 60_000, attempt: () => q.take(who, 2), seenSequence: w.sequence() }),
    );
    q.jobs = [1, 2, 3];
    w.notify('');
    await flush();
    // a: full batch (2) → wakes b and c; b gets 1 (less than asked: the queue is drained), c gets 0
    expect(q.attempts).toEqual(['a', 'b', 'c']);
    expect(await waits[0]).toEqual([job(1), job(2)]);
    expect(await waits[1]).toEqual([job(3)]);
    expect(w.size).toBe(2);
    w.shutdown();
    expect(await Promise.all(waits.slice(2))).toEqual([[], []]);
  });

  it('sleeps until a future runAt told by a notification, and tries then', async () => {
    const w = hub();
    const q = new FakeQueue();
    const got = w.wait({ key: 'k', limit: 1, waitMs: 60_000, attempt: () => q.take('a', 1), seenSequence: w.sequence() });
    await flush();
    w.notify(String(Date.now() + 5_000));
    await flush();
    expect(q.attempts).toEqual([]);
    q.jobs = [7];
    await vi.advanceTimersByTimeAsync(5_001);
    expect(await got).toEqual([job(7)]);
  });

  it('asks for the earliest future runAt and wakes then, with no notification at all', async () => {
    earliestAnswer = new Date(Date.now() + 10_000);
    const w = hub();
    const q = new FakeQueue();
    q.jobs = [9];
    const got = w.wait({ key: 'k', limit: 1, waitMs: 60_000, attempt: () => q.take('a', 1), seenSequence: w.sequence() });
    await vi.advanceTimersByTimeAsync(9_000);
    expect(q.attempts).toEqual([]);
    await vi.advanceTimersByTimeAsync(1_100);
    expect(await got).toEqual([job(9)]);
  });

  it('tries at once when woken between its own first attempt and its wait (no lost wake-up)', async () => {
    const w = hub();
    const q = new FakeQueue();
    const seen = w.sequence();
    w.notify(''); // a job became runnable after the caller's attempt found nothing
    q.jobs = [3];
    const got = w.wait({ key: 'k', limit: 1, waitMs: 60_000, attempt: () => q.take('a', 1), seenSequence: seen });
    expect(await got).toEqual([job(3)]);
  });

  it('answers [] when the caller goes away, and on shutdown', async () => {
    const w = hub();
    const q = new FakeQueue();
    const ac = new AbortController();
    const gone = w.wait({
      key: 'k',
      limit: 1,
      waitMs: 60_000,
      attempt: () => q.take('a', 1),
      seenSequence: w.sequence(),
      signal: ac.signal,
    });
    const other = w.wait({ key: 'k', limit: 1, waitMs: 60_000, attempt: () => q.take('b', 1), seenSequence: w.sequence() });
    ac.abort();
    expect(await gone).toEqual([]);
    w.shutdown();
    expect(await other).toEqual([]);
    expect(await w.wait({ key: 'k', limit: 1, waitMs: 1_000, attempt: () => q.take('c', 1), seenSequence: w.sequence() })).toEqual([]);
  });

  it('keeps waiters with different filters apart: each group tries for itself', async () => {
    const w = hub();
    const q = new FakeQueue();
    const x = w.wait({ key: 'types:x', limit: 1, waitMs: 60_000, attempt: () => q.take('x', 1), seenSequence: w.sequence() });
    const y = w.wait({ key: 'types:y', limit: 1, waitMs: 60_000, attempt: () => q.take('y', 1), seenSequence: w.sequence() });
    q.jobs = [1, 2];
    w.notify('');
    expect([await x, await y]).toEqual([[job(1)], [job(2)]]);
  });
});
