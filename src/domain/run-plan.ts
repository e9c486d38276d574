/**
 * What the PeriodicScheduler does with one due task: pure, so every policy is a row of a table test.
 */
import {
  type ConcurrencyPolicy,
  effectiveTimebox,
  effectiveTolerance,
  gapBefore,
  nextRunAfter,
  scheduleContext,
  type TaskTiming,
} from './periodic-task.js';

/** A due task as the scheduler took it: its timing, its policy, the slot due, its open job. */
export interface DueTaskFacts {
  timing: TaskTiming;
  concurrencyPolicy: ConcurrencyPolicy;
  /** The due slot (the task's nextRun). */
  slot: Date;
  /** Policy forbid: a queued or running job of the task, if any (else null). */
  openJobId: string | null;
}

/** The job to insert for a run. */
export interface RunSubmission {
  runAt: Date;
  /** The slot the job is for (unique per task). */
  scheduledAt: Date;
  /** Milliseconds from lease to deadline. */
  timebox: number;
  /** Policy allow: the drop check's interval and tolerance at lease time; else null. */
  runInterval: number | null;
  runTolerance: number | null;
}

export type RunPlan = {
  /** The task's next run after `now` (null: the schedule never fires again). */
  nextRun: Date | null;
  /** More than one slot had passed: the missed runs fold into this one submission. */
  coalesced: boolean;
} & (
  | { action: 'skip'; reason: 'forbid-open-job'; openJobId: string }
  | { action: 'submit'; submission: RunSubmission; /** Policy replace: cancel the open job first. */ replaceOpen: boolean }
);

/**
 * Plans the due run of a task at `now`:
 * - nextRun advances to the first scheduled time after `now`; the slots missed meanwhile coalesce
 *   into this one run (`coalesced` tells when there was more than one);
 * - forbid with an open job: skip this run (nextRun still advances);
 * - replace: submit, cancelling the open job first;
 * - allow: submit with the drop check's interval (the gap before the slot) and tolerance;
 * - every submission carries the timebox (the task's, or half the gap to the following slot).
 */
export function planDueRun(t: DueTaskFacts, now: Date): RunPlan {
  const { timing, slot } = t;
  const nextRun = nextRunAfter(timing, slot, now);
  const following = nextRun === null ? null : timing.schedule.next(slot, scheduleContext(timing));
  const coalesced = following !== null && following.getTime() <= now.getTime();
  if (t.concurrencyPolicy === 'forbid' && t.openJobId !== null) {
    return { nextRun, coalesced, action: 'skip', reason: 'forbid-open-job', openJobId: t.openJobId };
  }
  let runInterval: number | null = null;
  let runTolerance: number | null = null;
  if (t.concurrencyPolicy === 'allow') {
    runInterval = gapBefore(timing.schedule, slot);
    runTolerance = effectiveTolerance(timing, runInterval);
  }
  return {
    nextRun,
    coalesced,
    action: 'submit',
    replaceOpen: t.concurrencyPolicy === 'replace',
    submission: { runAt: slot, scheduledAt: slot, timebox: effectiveTimebox(timing, slot), runInterval, runTolerance },
  };
}
