import { sql } from 'kysely';
import { isJobId, jobCols, jobFromRow } from './row.js';
import { OPEN } from './sql.js';
/**
 * Marks an open job as watched (someone waits for its end: the trigger of migration 0023 notifies
 * when it ends, whoever ends it) and returns the job as it is — final already, or open and watched
 * from this statement on. A job already watched is not written again.
 */
export async function jobWatch(db, id) {
    if (!isJobId(id))
        return null;
    const { rows } = await sql `
    WITH marked AS (
      UPDATE job j SET watched = true WHERE j.id = ${id}::bigint AND j.state IN ${OPEN} AND NOT j.watched RETURNING ${jobCols('j')}
    )
    SELECT ${jobCols('m')} FROM marked m
    UNION ALL
    SELECT ${jobCols('j')} FROM job j WHERE j.id = ${id}::bigint AND NOT EXISTS (SELECT 1 FROM marked)`.execute(db.kysely);
    return rows[0] ? jobFromRow(rows[0]) : null;
}
//# sourceMappingURL=watch.js.map