/**
 * A periodic task's health: what its runs have come to, and the dead man's switch. The facts are
 * kept on the task where outcomes are written (a run finished, failed, timed out or was dropped);
 * the status is read from them and the clock. Pure: time comes in as an argument.
 */
import type { Schedule } from './schedule/index.js';

export const HEALTH_STATUSES = ['ok', 'failing', 'overdue', 'disabled'] as const;
export type HealthStatus = (typeof HEALTH_STATUSES)[number];

export interface TaskHealth {
  status: HealthStatus;
  lastSuccessAt: Date | null;
  lastFailureAt: Date | null;
  /** Runs that ended without finishing (failed, timed out, dropped) since the last one that finished. */
  consecutiveFailures: number;
}

export interface HealthFacts {
  enabled: boolean;
  lastSuccessAt: Date | null;
  lastFailureAt: Date | null;
  consecutiveFailures: number;
  /** When the task turns overdue unless a run finishes first (null: no alertAfter, or no slot due). */
  overdueAt: Date | null;
}

/** The first of disabled, overdue, failing that holds, else ok. */
export function healthOf(f: HealthFacts, now: Date): TaskHealth {
  const status: HealthStatus = !f.enabled
    ? 'disabled'
    : f.overdueAt !== null && f.overdueAt.getTime() <= now.getTime()
      ? 'overdue'
      : f.consecutiveFailures > 0
        ? 'failing'
        : 'ok';
  return { status, lastSuccessAt: f.lastSuccessAt, lastFailureAt: f.lastFailureAt, consecutiveFailures: f.consecutiveFailures };
}

/**
 * When a task turns overdue: `alertAfter` past the first slot due after its last finished run, or
 * after its creation when none ever finished. Null without alertAfter, or when no such slot comes
 * (the schedule ends, or endAt is reached first).
 */
export function overdueAtOf(t: {
  schedule: Schedule;
  createdAt: Date;
  firstRunAt: Date | null;
  alertAfter: number | null;
  endAt: Date | null;
  lastSuccessAt: Date | null;
}): Date | null {
  if (t.alertAfter === null) return null;
  const ctx = t.firstRunAt ? { anchor: t.createdAt, firstRunAt: t.firstRunAt } : { anchor: t.createdAt };
  // a slot at the very moment of creation counts (firstRunAt may be it); after a success, the next one
  const slot = t.schedule.next(t.lastSuccessAt ?? new Date(t.createdAt.getTime() - 1), ctx);
  if (slot === null || (t.endAt !== null && slot.getTime() >= t.endAt.getTime())) return null;
  return new Date(slot.getTime() + t.alertAfter);
}
