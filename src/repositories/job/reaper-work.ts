import { sql } from 'kysely';
import type { Executor } from '../../db/executor.js';
import { idlePermitsExist } from '../flow-default.js';
import { expiredCondition } from './drop-expired.js';
import { overdueCondition } from './find-overdue.js';

export interface ReaperWork {
  /** Running jobs whose lease expired or that are past deadline + grace (jobFindOverdue). */
  overdue: boolean;
  /** Queued jobs past their startBy (jobDropExpired). */
  expired: boolean;
  /** Idle permits or spent rate tokens of undeclared groups older than `permitsBefore` (groupsDefaultReclaim). */
  idlePermits: boolean;
}

/**
 * What the LeaseReaper has to do at `now`, asked in one statement that reads the partial indexes
 * its statements use and writes nothing: an idle instance's tick costs one read, not four
 * statements, two of them writes.
 */
export async function reaperWork(db: Executor, now: Date, permitsBefore: Date): Promise<ReaperWork> {
  const { rows } = await sql<{ overdue: boolean; expired: boolean; idle_permits: boolean }>`
    SELECT EXISTS (SELECT 1 FROM job WHERE ${overdueCondition(now)}) AS overdue,
           EXISTS (SELECT 1 FROM job WHERE ${expiredCondition(now)}) AS expired,
           ${idlePermitsExist(permitsBefore)} AS idle_permits`.execute(db.kysely);
  const r = rows[0]!;
  return { overdue: r.overdue, expired: r.expired, idlePermits: r.idle_permits };
}
