import { sql } from 'kysely';
import type { Executor } from '../../db/executor.js';

/** Deletes up to `limit` final jobs that finished before `before`. Returns how many. */
export async function jobDeleteOld(db: Executor, before: Date, limit: number): Promise<number> {
  const { rows } = await sql<{ deleted: number }>`
    WITH gone AS (
      DELETE FROM job WHERE id IN (
        SELECT id FROM job
        WHERE state IN ('finished', 'failed', 'dropped', 'cancelled') AND finished_at < ${before}::timestamptz
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED
      )
      RETURNING id
    ),
    events AS (DELETE FROM job_event e USING gone g WHERE e.job_id = g.id)
    SELECT count(*)::int AS deleted FROM gone`.execute(db.kysely);
  return rows[0]?.deleted ?? 0;
}
