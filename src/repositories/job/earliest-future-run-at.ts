import { sql } from 'kysely';
import type { Executor } from '../../db/executor.js';

/**
 * The earliest run_at of a queued job not yet runnable at `now`, or null: when sleeping waiters
 * must wake. Runnability is judged at millisecond precision, as in jobLease (see there).
 */
export async function jobEarliestFutureRunAt(db: Executor, now: Date): Promise<Date | null> {
  const { rows } = await sql<{ run_at: Date }>`
    SELECT run_at FROM job WHERE state = 'queued' AND run_at >= ${now}::timestamptz + interval '1 millisecond'
    ORDER BY run_at LIMIT 1`.execute(db.kysely);
  return rows[0]?.run_at ?? null;
}
