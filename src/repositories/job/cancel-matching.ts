import { sql } from 'kysely';
import type { Executor } from '../../db/executor.js';
import { filtered, type JobFilter } from './filter.js';

/**
 * Cancels up to `limit` queued or running jobs the filter selects, in one statement (the caller
 * repeats it in bounded batches: no transaction holds many rows for long). Rows another statement
 * holds are skipped, never waited for. Each gets a history entry with the actor. Returns how many.
 */
export async function jobCancelMatching(db: Executor, f: JobFilter, limit: number, now: Date, actor: string | null): Promise<number> {
  const picked = filtered(db, f)
    .select(['id', 'state', 'attempts', 'worker'])
    .where('state', 'in', ['queued', 'running'])
    .orderBy('id')
    .limit(limit)
    .forUpdate()
    .skipLocked();
  const { rows } = await sql<{ n: number }>`
    WITH picked AS MATERIALIZED (${picked}),
    upd AS (
      UPDATE job j SET
        state = 'cancelled',
        lease_token = CASE WHEN j.state = 'running' THEN j.lease_token ELSE NULL END,
        lease_expires_at = NULL,
        finished_at = ${now},
        updated_at = ${now}
      FROM picked p WHERE j.id = p.id
      RETURNING j.id
    ),
    events AS (
      INSERT INTO job_event (job_id, at, kind, attempt, worker, actor, detail)
      SELECT p.id, ${now}, 'cancelled', CASE WHEN p.state = 'running' THEN p.attempts END,
             CASE WHEN p.state = 'running' THEN p.worker END, ${actor}, jsonb_build_object('from', p.state, 'bulk', true)
      FROM picked p
    )
    SELECT count(*)::int AS n FROM upd`.execute(db.kysely);
  return rows[0]?.n ?? 0;
}
