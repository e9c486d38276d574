import { sql } from 'kysely';
import type { Executor } from '../../db/executor.js';
import { changeOrExplain, type ChangeResult } from './change.js';
import { isJobId, type JobRow } from './row.js';
import { CANCELLABLE, cancelEvents, cancelSet } from './sql.js';

/**
 * waiting, queued or running → cancelled. A running job keeps its lease token, so that its worker's next
 * heartbeat answers cancel: true and its report is accepted; a queued job's old token is cleared.
 */
export async function jobCancel(db: Executor, id: string, now: Date, actor: string | null = null): Promise<ChangeResult> {
  if (!isJobId(id)) return { outcome: 'not_found' };
  const { rows } = await sql<JobRow>`
    WITH old AS (SELECT id, state, attempts, worker FROM job WHERE id = ${id}::bigint AND state IN ${CANCELLABLE}),
    upd AS (
      UPDATE job j SET ${cancelSet(now)}
      FROM old WHERE j.id = old.id AND j.state IN ${CANCELLABLE}
      RETURNING j.*
    ),
    events AS (${cancelEvents(now, actor, sql`jsonb_build_object('from', old.state)`)})
    SELECT * FROM upd`.execute(db.kysely);
  return changeOrExplain(db, id, rows);
}
