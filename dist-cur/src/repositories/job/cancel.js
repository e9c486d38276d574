import { sql } from 'kysely';
import { changeOrExplain } from './change.js';
import { isJobId } from './row.js';
import { CANCELLABLE, cancelEvents, cancelSet } from './sql.js';
/**
 * waiting, queued or running → cancelled. A running job keeps its lease token, so that its worker's next
 * heartbeat answers cancel: true and its report is accepted; a queued job's old token is cleared.
 */
export async function jobCancel(db, id, now, actor = null) {
    if (!isJobId(id))
        return { outcome: 'not_found' };
    const { rows } = await sql `
    WITH old AS (SELECT id, state, attempts, worker FROM job WHERE id = ${id}::bigint AND state IN ${CANCELLABLE}),
    upd AS (
      UPDATE job j SET ${cancelSet(now)}
      FROM old WHERE j.id = old.id AND j.state IN ${CANCELLABLE}
      RETURNING j.*
    ),
    events AS (${cancelEvents(now, actor, sql `jsonb_build_object('from', old.state)`)})
    SELECT * FROM upd`.execute(db.kysely);
    return changeOrExplain(db, id, rows);
}
//# sourceMappingURL=cancel.js.map