import { sql } from 'kysely';
import type { Executor } from '../../db/executor.js';
import { isUniqueViolation } from '../../db/pg-errors.js';
import { changeOrExplain, type ChangeResult } from './change.js';
import { isJobId, type JobRow } from './row.js';
import { JOBS_CHANNEL, retryEvents, retrySet } from './sql.js';

/**
 * failed, dropped or cancelled → queued, runnable now, with attempts reset to 0 (so maxAttempts
 * more tries; the last error stays on the job until the next outcome replaces it). Wakes waiting
 * workers. A uniqueKey now held by another open job makes it a conflict.
 */
export async function jobRetry(
  db: Executor,
  id: string,
  now: Date,
  actor: string | null = null,
): Promise<ChangeResult | { outcome: 'unique_conflict' }> {
  if (!isJobId(id)) return { outcome: 'not_found' };
  try {
    const { rows } = await sql<JobRow>`
      WITH old AS (SELECT id, state, error FROM job WHERE id = ${id}::bigint AND state IN ('failed', 'dropped', 'cancelled')),
      upd AS (
        UPDATE job j SET ${retrySet(now)}
        WHERE id = ${id}::bigint AND state IN ('failed', 'dropped', 'cancelled')
        RETURNING *
      ),
      events AS (${retryEvents(now, actor, false)}),
      notify AS (SELECT pg_notify(${JOBS_CHANNEL}, '') FROM upd)
      SELECT u.*, (SELECT count(*) FROM notify) AS notified FROM upd u`.execute(db.kysely);
    return await changeOrExplain(db, id, rows);
  } catch (err) {
    if (isUniqueViolation(err)) return { outcome: 'unique_conflict' };
    throw err;
  }
}
