import { sql } from 'kysely';
import type { Executor } from '../../db/executor.js';

/**
 * When sleeping waiters must wake, or null: the earliest run_at of a queued job not yet runnable at
 * `now`, or the moment a rate-limited type or group gets a token back (a token used at t is free
 * again at t + window), whichever comes first. Runnability is judged at millisecond precision, as
 * in jobLease (see there).
 */
export async function jobEarliestFutureRunAt(db: Executor, now: Date): Promise<Date | null> {
  const { rows } = await sql<{ at: Date | null }>`
    SELECT least(
      (SELECT run_at FROM job WHERE state = 'queued' AND run_at >= ${now}::timestamptz + interval '1 millisecond'
        ORDER BY run_at LIMIT 1),
      (SELECT min(t.used_at + p.rate_window_ms * interval '1 millisecond')
         FROM flow_policy p JOIN flow_token t ON t.kind = p.kind AND t.name = p.name AND t.n <= p.rate_limit
        WHERE p.rate_limit IS NOT NULL AND t.used_at + p.rate_window_ms * interval '1 millisecond' > ${now}::timestamptz)
    ) AS at`.execute(db.kysely);
  return rows[0]?.at ?? null;
}
