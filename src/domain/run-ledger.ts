/**
 * The run ledger of a periodic task (GET /periodic-tasks/{id}/runs): every slot since the task was
 * created, newest first, with what became of it. A page is a merge of three sources, each read
 * newest first and no further than the page needs:
 *  - the jobs of slots (one per slot: the unique (task, slot) key);
 *  - the records of slots that got no job (skipped, missed; a run of missed slots is one record
 *    that carries the schedule it was read from) and of jobs submitted by a trigger;
 *  - the slots due but not decided yet (from the task's nextRun up to now: the scheduler is about
 *    to take them, or no instance runs it).
 * Pure: the caller reads the sources and passes `now`.
 */
import type { JobState } from './job.js';
import type { Schedule, ScheduleContext } from './schedule/index.js';
import { slotsBefore } from './slots.js';

export const RUN_OUTCOMES = ['pending', 'finished', 'failed', 'dropped', 'cancelled', 'skipped', 'missed'] as const;
export type RunOutcome = (typeof RUN_OUTCOMES)[number];

export interface RunEntry {
  slot: Date;
  outcome: RunOutcome;
  jobId: string | null;
  attempts: number | null;
  startedAt: Date | null;
  finishedAt: Date | null;
  detail: Record<string, unknown>;
}

/** Where a page starts: before this slot (and, at the same slot, after this rank). */
export interface LedgerCursor {
  slot: Date;
  /** 0: a slot of the schedule; 1: a triggered job at the same moment (listed first). */
  rank: 0 | 1;
}

export interface LedgerJob {
  id: string;
  slot: Date;
  state: JobState;
  attempts: number;
  startedAt: Date | null;
  finishedAt: Date | null;
  error: unknown;
}

export interface LedgerRecord {
  slot: Date;
  lastSlot: Date;
  slots: number;
  outcome: 'skipped' | 'missed' | 'triggered';
  jobId: string | null;
  /** The schedule of a record of more than one slot. */
  schedule: { schedule: Schedule; ctx: ScheduleContext } | null;
  /** triggered: its job (null once retention deleted it). */
  job: Omit<LedgerJob, 'id' | 'slot'> | null;
}

export interface LedgerSources {
  /** The jobs of slots in [from, upTo], newest first. */
  jobs: readonly LedgerJob[];
  /** The records holding a slot in [from, upTo], newest first. */
  records: readonly LedgerRecord[];
  /** The task's current schedule and nextRun, for the slots due but not decided yet. */
  current: { schedule: Schedule; ctx: ScheduleContext; nextRun: Date | null } | null;
}

export interface LedgerPage {
  items: RunEntry[];
  next: LedgerCursor | null;
}

const OPEN: readonly JobState[] = ['queued', 'running'];

function outcomeOf(state: JobState): RunOutcome {
  return OPEN.includes(state) ? 'pending' : (state as RunOutcome);
}

function jobDetail(state: JobState, error: unknown): Record<string, unknown> {
  if (state === 'queued' || state === 'running' || state === 'finished' || error === null || error === undefined) return {};
  const reason = typeof error === 'object' && error !== null && 'reason' in error ? (error as { reason: unknown }).reason : undefined;
  return reason === undefined ? { error } : { reason, error };
}

/**
 * The upper bound of the page (inclusive): the cursor's slot, or `to`, never past now. A triggered
 * job is a moment of its own beside a slot at the same time (rank 1 before rank 0).
 */
export function ledgerUpTo(now: Date, to: Date | null, cursor: LedgerCursor | null): Date {
  const top = Math.min(now.getTime(), to?.getTime() ?? Number.POSITIVE_INFINITY);
  return new Date(cursor === null ? top : Math.min(top, cursor.slot.getTime()));
}

/** How many of each source a page of `limit` reads: enough to know whether another page follows. */
export const ledgerReadLimit = (limit: number) => limit + 2;

/** Merges the sources into one page of at most `limit` entries in [from, upTo], after `cursor`. */
export function ledgerPage(
  src: LedgerSources,
  p: { from: Date; upTo: Date; now: Date; cursor: LedgerCursor | null; limit: number },
): LedgerPage {
  const n = ledgerReadLimit(p.limit);
  const end = new Date(p.upTo.getTime() + 1); // slotsBefore takes an exclusive bound
  const byKey = new Map<string, { rank: 0 | 1; entry: RunEntry; fromJob: boolean }>();
  const put = (rank: 0 | 1, entry: RunEntry, fromJob: boolean) => {
    const key = `${entry.slot.getTime()}:${rank}`;
    const had = byKey.get(key);
    if (had === undefined || (fromJob && !had.fromJob)) byKey.set(key, { rank, entry, fromJob });
  };
  for (const j of src.jobs) {
    put(
      0,
      {
        slot: j.slot,
        outcome: outcomeOf(j.state),
        jobId: j.id,
        attempts: j.attempts,
        startedAt: j.startedAt,
        finishedAt: j.finishedAt,
        detail: jobDetail(j.state, j.error),
      },
      true,
    );
  }
  const gap = (slot: Date, r: LedgerRecord): RunEntry => ({
    slot,
    outcome: r.outcome as 'skipped' | 'missed',
    jobId: null,
    attempts: null,
    startedAt: null,
    finishedAt: null,
    detail: r.outcome === 'skipped' && r.jobId !== null ? { blockedBy: r.jobId } : {},
  });
  for (const r of src.records) {
    if (r.outcome === 'triggered') {
      if (r.job === null || r.jobId === null) continue; // its job is gone with retention
      put(
        1,
        {
          slot: r.slot,
          outcome: outcomeOf(r.job.state),
          jobId: r.jobId,
          attempts: r.job.attempts,
          startedAt: r.job.startedAt,
          finishedAt: r.job.finishedAt,
          detail: { trigger: true, ...jobDetail(r.job.state, r.job.error) },
        },
        false,
      );
    } else if (r.slots === 1 || r.schedule === null) {
      if (r.slot.getTime() >= p.from.getTime() && r.slot.getTime() <= p.upTo.getTime()) put(0, gap(r.slot, r), false);
    } else {
      const before = new Date(Math.min(end.getTime(), r.lastSlot.getTime() + 1));
      const lowest = new Date(Math.max(r.slot.getTime(), p.from.getTime()));
      for (const s of slotsBefore(r.schedule.schedule, r.schedule.ctx, before, lowest, n)) put(0, gap(s, r), false);
    }
  }
  const cur = src.current;
  if (cur !== null && cur.nextRun !== null && cur.nextRun.getTime() <= p.upTo.getTime()) {
    const lowest = new Date(Math.max(cur.nextRun.getTime(), p.from.getTime()));
    for (const s of slotsBefore(cur.schedule, cur.ctx, end, lowest, n)) {
      put(0, { slot: s, outcome: 'pending', jobId: null, attempts: null, startedAt: null, finishedAt: null, detail: { due: true } }, false);
    }
  }
  const c = p.cursor;
  const sorted = [...byKey.values()]
    .filter(
      (x) => c === null || x.entry.slot.getTime() < c.slot.getTime() || (x.entry.slot.getTime() === c.slot.getTime() && x.rank < c.rank),
    )
    .sort((a, b) => b.entry.slot.getTime() - a.entry.slot.getTime() || b.rank - a.rank);
  const page = sorted.slice(0, p.limit);
  const last = page[page.length - 1];
  return {
    items: page.map((x) => x.entry),
    next: sorted.length > p.limit && last !== undefined ? { slot: last.entry.slot, rank: last.rank } : null,
  };
}
