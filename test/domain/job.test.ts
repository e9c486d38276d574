import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BACKOFF_MAX_MS,
  backoffJitter,
  backoffMs,
  deadlineOf,
  earliestStart,
  reapDecision,
  retryDelayMs,
  shouldCancel,
  shouldDrop,
  timeboxGraceMs,
} from '../../src/domain/job.js';

const at = (iso: string) => new Date(`2026-01-01T${iso}Z`);

describe('retry backoff', () => {
  it('doubles per attempt from 2 s and stops growing at 1 h', () => {
    expect([1, 2, 3, 4, 10, 11, 12, 13, 50].map((a) => retryDelayMs(a, 1))).toEqual([
      2_000, 4_000, 8_000, 16_000, 1_024_000, 2_048_000, 3_600_000, 3_600_000, 3_600_000,
    ]);
  });

  it('spreads retries by ±20 % with the random source it is given', () => {
    expect(backoffMs(3, () => 0)).toBe(6_400);
    expect(backoffMs(3, () => 0.5)).toBe(8_000);
    expect(backoffMs(3, () => 0.999999)).toBe(9_600);
  });

  it('stays within 80 % and 120 % of the base for any draw and attempt', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1000 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (attempts, r) => {
        const base = Math.min(1000 * 2 ** Math.min(attempts, 31), BACKOFF_MAX_MS);
        const d = backoffMs(attempts, () => r);
        expect(d).toBeGreaterThanOrEqual(Math.floor(base * 0.8));
        expect(d).toBeLessThanOrEqual(Math.ceil(base * 1.2));
        expect(Number.isInteger(d)).toBe(true);
      }),
    );
  });

  it('draws jitter factors in [0.8, 1.2)', () => {
    expect(backoffJitter(() => 0)).toBeCloseTo(0.8);
    expect(backoffJitter(() => 0.5)).toBeCloseTo(1);
  });
});

describe('deadlines and grace', () => {
  it('gives 10 % of the timebox after the deadline, at least 1 s', () => {
    expect(timeboxGraceMs(30_000)).toBe(3_000);
    expect(timeboxGraceMs(5_000)).toBe(1_000);
    expect(timeboxGraceMs(500)).toBe(1_000);
    expect(timeboxGraceMs(3_600_000)).toBe(360_000);
  });

  it('puts the deadline at startedAt + timebox, or none without a timebox', () => {
    expect(deadlineOf(at('00:00:35'), 30_000)).toEqual(at('00:01:05'));
    expect(deadlineOf(at('00:00:35'), null)).toBeNull();
  });

  it('tells a heartbeat to cancel once the deadline is reached or the job was cancelled', () => {
    const deadline = at('00:01:05');
    expect(shouldCancel({ state: 'running', deadline }, at('00:01:04.999'))).toBe(false);
    expect(shouldCancel({ state: 'running', deadline }, at('00:01:05'))).toBe(true);
    expect(shouldCancel({ state: 'cancelled', deadline: null }, at('00:00:00'))).toBe(true);
    expect(shouldCancel({ state: 'running', deadline: null }, at('23:00:00'))).toBe(false);
  });
});

describe('the drop check of policy allow', () => {
  const interval = 60_000;
  const tolerance = 5_000;

  it('lets the first run of a task begin at any time', () => {
    expect(earliestStart(null, interval, tolerance)).toBeNull();
    expect(shouldDrop(at('00:00:01'), null, interval, tolerance)).toBe(false);
  });

  it('drops a run that would begin before lastRun + interval − tolerance', () => {
    // Nuntium timeline 3: lastRun 01:35, A2 would begin 02:03 (28 s later)
    expect(shouldDrop(at('00:02:03'), at('00:01:35'), interval, tolerance)).toBe(true);
    expect(shouldDrop(at('00:02:29.999'), at('00:01:35'), interval, tolerance)).toBe(true);
  });

  it('runs a run that begins at lastRun + interval − tolerance or later', () => {
    expect(shouldDrop(at('00:02:30'), at('00:01:35'), interval, tolerance)).toBe(false);
    // Nuntium timeline 1: lastRun 00:35, A2 begins 01:32 (57 s ≥ 55 s)
    expect(shouldDrop(at('00:01:32'), at('00:00:35'), interval, tolerance)).toBe(false);
  });
});

describe('the lease reaper decision', () => {
  const base = { attempts: 1, maxAttempts: 3, worker: 'w1', leaseExpiresAt: at('00:01:00'), deadline: null, timebox: null };

  it('leaves a job whose lease has not expired', () => {
    expect(reapDecision(base, at('00:01:00'))).toBeNull();
  });

  it('queues a job again at once when its lease expired and attempts remain', () => {
    const d = reapDecision(base, at('00:01:00.001'));
    expect(d).toMatchObject({ action: 'requeue', runAt: at('00:01:00.001'), error: { kind: 'lease_expired', worker: 'w1' } });
  });

  it('fails a job whose lease expired on its last attempt', () => {
    expect(reapDecision({ ...base, attempts: 3 }, at('00:02:00'))).toMatchObject({ action: 'fail', error: { kind: 'lease_expired' } });
  });

  it('waits out the grace after the deadline, then fails with a timebox error whatever the attempts', () => {
    const job = { ...base, leaseExpiresAt: at('00:10:00'), deadline: at('00:01:05'), timebox: 30_000 };
    expect(reapDecision(job, at('00:01:05'))).toBeNull();
    expect(reapDecision(job, at('00:01:08'))).toBeNull(); // grace 3 s
    const d = reapDecision(job, at('00:01:08.001'));
    expect(d).toMatchObject({ action: 'fail', error: { kind: 'timebox', deadline: '2026-01-01T00:01:05.000Z' } });
    expect((d as { error: { message: string } }).error.message).toMatch(/timebox of 30s .* grace of 3s/);
  });

  it('lets the grace, not the lease, decide once the deadline has passed', () => {
    const job = { ...base, leaseExpiresAt: at('00:01:06'), deadline: at('00:01:05'), timebox: 30_000 };
    expect(reapDecision(job, at('00:01:07'))).toBeNull();
  });
});
