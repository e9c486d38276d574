import { sql } from 'kysely';
import type { Executor } from '../../db/executor.js';
import { changeOrExplain, type ChangeResult } from './change.js';
import { isJobId, type JobRow } from './row.js';
import { JOBS_CHANNEL } from './sql.js';

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
        UPDATE job SET
          state = 'queued', run_at = ${now}, attempts = 0, worker = NULL, lease_token = NULL, lease_expires_at = NULL,
          lease_duration = NULL, started_at = NULL, deadline = NULL, finished_at = NULL, progress = NULL, result = NULL,
          updated_at = ${now}
        WHERE id = ${id}::bigint AND state IN ('failed', 'dropped', 'cancelled')
        RETURNING *
      ),
      events AS (
        INSERT INTO job_event (job_id, at, kind, actor, detail)
        SELECT old.id, ${now}, 'retried', ${actor}, jsonb_strip_nulls(jsonb_build_object('from', old.state, 'error', old.error))
        FROM old JOIN upd u ON u.id = old.id
      ),
      notify AS (SELECT pg_notify(${JOBS_CHANNEL}, '') FROM upd)
      SELECT u.*, (SELECT count(*) FROM notify) AS notified FROM upd u`.execute(db.kysely);
    return await changeOrExplain(db, id, rows);
  } catch (err) {
    if ((err as { code?: string }).code === '23505') return { outcome: 'unique_conflict' };
    throw err;
  }
}
