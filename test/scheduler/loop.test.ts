import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Clock } from '../../src/clock.js';
import { Loop, type StepReason } from '../../src/scheduler/loop.js';

/** The loops' shared life cycle, on fake timers: no test here waits on the wall clock. */

const clock: Clock = { now: () => new Date(Date.now()) };
const logger = pino({ level: 'silent' });

/** A step the test drives: records reasons, answers with the next planned result. */
function scripted(results: (number | Error | (() => Promise<number>))[]) {
  const reasons: StepReason[] = [];
  const step = async (reason: StepReason) => {
    reasons.push(reason);
    const r = results.shift() ?? 60_000;
    if (r instanceof Error) throw r;
    if (typeof r === 'function') return r();
    return r;
  };
  return { reasons, step };
}

const flush = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

beforeEach(() => {
  vi.useFakeTimers({ now: new Date('2026-11-20T00:00:00.000Z') });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('Loop', () => {
  it('steps at start, then after each sleep the step asked for', async () => {
    const s = scripted([1_000, 5_000]);
    const loop = new Loop({ name: 't', logger, clock, step: s.step, failureBackoff: { initialMs: 100, maxMs: 1_000 } });
    loop.start();
    await flush();
    expect(s.reasons).toEqual(['start']);
    await vi.advanceTimersByTimeAsync(999);
    expect(s.reasons).toEqual(['start']);
    await vi.advanceTimersByTimeAsync(1);
    expect(s.reasons).toEqual(['start', 'timer']);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(s.reasons).toEqual(['start', 'timer', 'timer']);
    await loop.stop();
  });

  it('steps again at once when a step asks for 0 ms', async () => {
    const s = scripted([0, 0, 10_000]);
    const loop = new Loop({ name: 't', logger, clock, step: s.step, failureBackoff: { initialMs: 100, maxMs: 1_000 } });
    loop.start();
    await flush();
    await flush();
    expect(s.reasons).toEqual(['start', 'timer', 'timer']);
    await loop.stop();
  });

  it('wake() cuts a sleep short, and a wake during a step makes the next step come at once', async () => {
    let release!: () => void;
    const s = scripted([
      60_000,
      () =>
        new Promise<number>((resolve) => {
          release = () => resolve(60_000);
        }),
      60_000,
    ]);
    const loop = new Loop({ name: 't', logger, clock, step: s.step, failureBackoff: { initialMs: 100, maxMs: 1_000 } });
    loop.start();
    await flush();
    loop.wake(); // during the sleep of 60 s
    await flush();
    expect(s.reasons).toEqual(['start', 'wake']);
    loop.wake(); // during the second step, which is still running
    release();
    await flush();
    expect(s.reasons).toEqual(['start', 'wake', 'wake']);
    await loop.stop();
  });

  it('retries a failed step after a back-off that doubles up to its cap, and resets after a success', async () => {
    const boom = new Error('database down');
    const s = scripted([boom, boom, boom, boom, 5_000, boom]);
    const loop = new Loop({ name: 't', logger, clock, step: s.step, failureBackoff: { initialMs: 100, maxMs: 300 } });
    const waits: number[] = [];
    loop.events.on('failed', ({ retryInMs }) => waits.push(retryInMs));
    loop.start();
    await flush();
    await vi.advanceTimersByTimeAsync(100 + 200 + 300 + 300);
    expect(s.reasons).toEqual(['start', 'retry', 'retry', 'retry', 'retry']);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(waits).toEqual([100, 200, 300, 300, 100]);
    await loop.stop();
  });

  it('retries at once when woken while it waits after a failure (the database came back)', async () => {
    const s = scripted([new Error('down'), 60_000]);
    const loop = new Loop({ name: 't', logger, clock, step: s.step, failureBackoff: { initialMs: 30_000, maxMs: 30_000 } });
    loop.start();
    await flush();
    loop.wake();
    await flush();
    expect(s.reasons).toEqual(['start', 'retry']);
    await loop.stop();
  });

  it('stop() waits for a step in flight and steps no more', async () => {
    let release!: () => void;
    const s = scripted([() => new Promise<number>((resolve) => (release = () => resolve(10)))]);
    const loop = new Loop({ name: 't', logger, clock, step: s.step, failureBackoff: { initialMs: 100, maxMs: 1_000 } });
    const stopped = vi.fn();
    loop.events.on('stopped', stopped);
    loop.start();
    await flush();
    let done = false;
    const stopping = loop.stop().then(() => (done = true));
    await flush();
    expect(done).toBe(false);
    release();
    await stopping;
    expect(stopped).toHaveBeenCalledOnce();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(s.reasons).toEqual(['start']);
    expect(loop.isRunning).toBe(false);
  });
});
