import { sql } from 'kysely';
import type { Executor } from '../../db/executor.js';
import { changeOrExplain, type ChangeResult } from './change.js';
import { isJobId, type JobRow } from './row.js';
import { OPEN } from './sql.js';

/**
 * queued or running → cancelled. A running job keeps its lease token, so that its worker's next
 * heartbeat answers cancel: true and its report is accepted; a queued job's old token is cleared.
 */
export async function jobCancel(db: Executor, id: string, now: Date, actor: string | null = null): Promise<ChangeResult> {
  if (!isJobId(id)) return { outcome: 'not_found' };
  const { rows } = await sql<JobRow>`
    WITH old AS (SELECT id, state, attempts, worker FROM job WHERE id = ${id}::bigint AND state IN ${OPEN}),
    upd AS (
      UPDATE job j SET
        state = 'cancelled',
        lease_token = CASE WHEN j.state = 'running' THEN j.lease_token ELSE NULL END,
        lease_expires_at = NULL,
        finished_at = ${now},
        updated_at = ${now}
      FROM old WHERE j.id = old.id AND j.state IN ${OPEN}
      RETURNING j.*
    ),
    events AS (
      INSERT INTO job_event (job_id, at, kind, attempt, worker, actor, detail)
      SELECT old.id, ${now}, 'cancelled', CASE WHEN old.state = 'running' THEN old.attempts END,
             CASE WHEN old.state = 'running' THEN old.worker END, ${actor}, jsonb_build_object('from', old.state)
      FROM old JOIN upd u ON u.id = old.id
    )
    SELECT * FROM upd`.execute(db.kysely);
  return changeOrExplain(db, id, rows);
}
