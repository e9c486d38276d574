/**
 * What the PeriodicScheduler does with one due task: pure, so every policy is a row of a table test.
 */
import {
  type ConcurrencyPolicy,
  effectiveTimebox,
  effectiveTolerance,
  gapBefore,
  type MisfirePolicy,
  nextRunAfter,
  scheduleContext,
  type TaskTiming,
} from './periodic-task.js';

/** Under misfirePolicy skip, a due run later than this is missed too (Quartz's misfire threshold). */
export const MISFIRE_THRESHOLD_MS = 60_000;
/** The most slots counted between the due one and now (a 1 s interval after a year away). */
const MAX_SLOTS_COUNTED = 1_000_000;

/** A due task as the scheduler took it: its timing, its policies, the slot due, its open job. */
export interface DueTaskFacts {
  timing: TaskTiming;
  concurrencyPolicy: ConcurrencyPolicy;
  /** Default coalesce. */
  misfirePolicy?: MisfirePolicy;
  /** misfirePolicy catch-up: the most runs submitted (default 10). */
  catchUpLimit?: number;
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

export interface RunPlan {
  /** The task's next run after `now` (null: the schedule never fires again). */
  nextRun: Date | null;
  /** Slots due at `now`: the task's nextRun and every later one up to now. */
  due: number;
  /** Policy coalesce folded more than one due slot into one run. */
  coalesced: boolean;
  /** Jobs to insert, in slot order (none: see `skipped`). */
  submissions: RunSubmission[];
  /** Policy replace: cancel the task's open job first. */
  replaceOpen: boolean;
  /** Why due slots were not submitted: an open job (policy forbid), or missed (misfire skip / over catchUpLimit). */
  skipped: { reason: 'forbid-open-job'; openJobId: string } | { reason: 'missed'; slots: number } | null;
}

/** The slots from `slot` up to `now`: how many, and the last `keep` of them. */
function dueSlots(t: DueTaskFacts, now: Date, keep: number, countUpTo = MAX_SLOTS_COUNTED): { count: number; last: Date[] } {
  const last: Date[] = [];
  const ctx = scheduleContext(t.timing);
  let count = 0;
  for (let s: Date | null = t.slot; s !== null && s.getTime() <= now.getTime() && count < countUpTo; s = t.timing.schedule.next(s, ctx)) {
    count++;
    last.push(s);
    if (last.length > keep) last.shift();
  }
  return { count: Math.max(count, 1), last: last.length > 0 ? last : [t.slot] };
}

function submission(t: DueTaskFacts, slot: Date, dropCheck: boolean): RunSubmission {
  let runInterval: number | null = null;
  let runTolerance: number | null = null;
  if (dropCheck && t.concurrencyPolicy === 'allow') {
    runInterval = gapBefore(t.timing.schedule, slot);
    runTolerance = effectiveTolerance(t.timing, runInterval);
  }
  return { runAt: slot, scheduledAt: slot, timebox: effectiveTimebox(t.timing, slot), runInterval, runTolerance };
}

/**
 * Plans the due run(s) of a task at `now`. nextRun always advances to the first scheduled time after
 * `now`. Then:
 * - forbid with an open job: nothing is submitted;
 * - misfirePolicy coalesce (default): one run, for the due slot, whatever number of slots passed
 *   (`coalesced` tells when there was more than one);
 * - skip: only a due slot that is the last one before `now` and at most MISFIRE_THRESHOLD_MS late
 *   runs; missed slots are not submitted;
 * - catch-up: each due slot runs, oldest first, at most catchUpLimit (the most recent ones). Under
 *   forbid and replace only one job of a task may be open, so one run is submitted: forbid the
 *   oldest of them, replace the newest. Catch-up runs carry no drop check (they are meant to run
 *   one after another);
 * - replace cancels the open job first; allow carries the drop check (the gap before the slot and
 *   the tolerance) on an ordinary run; every submission carries its timebox.
 */
export function planDueRun(t: DueTaskFacts, now: Date): RunPlan {
  const misfire = t.misfirePolicy ?? 'coalesce';
  const limit = t.catchUpLimit ?? 10;
  const nextRun = nextRunAfter(t.timing, t.slot, now);
  // coalesce only needs to know whether more than one slot passed
  const { count, last } = dueSlots(t, now, misfire === 'catch-up' ? limit : 1, misfire === 'coalesce' ? 2 : MAX_SLOTS_COUNTED);
  const base = { nextRun, due: count, replaceOpen: t.concurrencyPolicy === 'replace' };
  if (t.concurrencyPolicy === 'forbid' && t.openJobId !== null) {
    return {
      ...base,
      coalesced: false,
      submissions: [],
      replaceOpen: false,
      skipped: { reason: 'forbid-open-job', openJobId: t.openJobId },
    };
  }
  switch (misfire) {
    case 'coalesce':
      return { ...base, coalesced: count > 1, submissions: [submission(t, t.slot, true)], skipped: null };
    case 'skip': {
      const latest = last[last.length - 1]!;
      const onTime = now.getTime() - latest.getTime() <= MISFIRE_THRESHOLD_MS;
      const missed = count - (onTime ? 1 : 0);
      return {
        ...base,
        coalesced: false,
        submissions: onTime ? [submission(t, latest, true)] : [],
        skipped: missed > 0 ? { reason: 'missed', slots: missed } : null,
      };
    }
    case 'catch-up': {
      const one = t.concurrencyPolicy !== 'allow';
      const chosen = one ? [t.concurrencyPolicy === 'forbid' ? last[0]! : last[last.length - 1]!] : last;
      const missed = count - chosen.length;
      return {
        ...base,
        coalesced: false,
        submissions: chosen.map((s) => submission(t, s, count === 1)),
        skipped: missed > 0 ? { reason: 'missed', slots: missed } : null,
      };
    }
  }
}

/** The most slots one backfill call submits. */
export const MAX_BACKFILL = 1000;

/** The slots of a schedule in [from, to), at most `max` + 1 (one more tells the range holds too many). */
export function slotsBetween(timing: TaskTiming, from: Date, to: Date, max: number): Date[] {
  const ctx = scheduleContext(timing);
  const out: Date[] = [];
  for (
    let s = timing.schedule.next(new Date(from.getTime() - 1), ctx);
    s !== null && s.getTime() < to.getTime();
    s = timing.schedule.next(s, ctx)
  ) {
    out.push(s);
    if (out.length > max) break;
  }
  return out;
}

export interface BackfillPlan {
  submissions: RunSubmission[];
  replaceOpen: boolean;
  /** Free slots not submitted, and why. */
  skipped: { scheduledAt: Date; reason: 'forbid-open-job' | 'one-open-job-at-a-time' }[];
}

/**
 * Which of the free slots (those without a job) a backfill submits, the concurrency policy applied
 * as the scheduler applies it: allow submits every slot; forbid submits the oldest, and none while
 * the task has an open job; replace submits the newest and cancels the open job. Backfilled runs
 * carry no drop check: they are meant to run one after another.
 */
export function planBackfill(t: Pick<DueTaskFacts, 'timing' | 'concurrencyPolicy' | 'openJobId'>, free: readonly Date[]): BackfillPlan {
  const make = (slot: Date): RunSubmission => ({
    runAt: slot,
    scheduledAt: slot,
    timebox: effectiveTimebox(t.timing, slot),
    runInterval: null,
    runTolerance: null,
  });
  if (free.length === 0) return { submissions: [], replaceOpen: false, skipped: [] };
  switch (t.concurrencyPolicy) {
    case 'allow':
      return { submissions: free.map(make), replaceOpen: false, skipped: [] };
    case 'forbid':
      if (t.openJobId !== null)
        return { submissions: [], replaceOpen: false, skipped: free.map((s) => ({ scheduledAt: s, reason: 'forbid-open-job' })) };
      return {
        submissions: [make(free[0]!)],
        replaceOpen: false,
        skipped: free.slice(1).map((s) => ({ scheduledAt: s, reason: 'one-open-job-at-a-time' })),
      };
    case 'replace':
      return {
        submissions: [make(free[free.length - 1]!)],
        replaceOpen: true,
        skipped: free.slice(0, -1).map((s) => ({ scheduledAt: s, reason: 'one-open-job-at-a-time' })),
      };
  }
}
