import { sql } from 'kysely';
import { isUniqueViolation } from '../../db/pg-errors.js';
import { changeOrExplain } from './change.js';
import { isJobId } from './row.js';
import { JOBS_CHANNEL, retryEvents, retrySet } from './sql.js';
/**
 * failed, dropped or cancelled → queued, runnable now, with attempts reset to 0 (so maxAttempts
 * more tries; the last error stays on the job until the next outcome replaces it). Wakes waiting
 * workers. A uniqueKey now held by another open job makes it a conflict.
 */
export async function jobRetry(db, id, now, actor = null) {
    if (!isJobId(id))
        return { outcome: 'not_found' };
    try {
        const { rows } = await sql `
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
    }
    catch (err) {
        if (isUniqueViolation(err))
            return { outcome: 'unique_conflict' };
        throw err;
    }
}
//# sourceMappingURL=retry.js.map