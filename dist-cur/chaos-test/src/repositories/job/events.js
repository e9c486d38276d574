import { sql } from 'kysely';
import { isJobId } from './row.js';
/** The stored history of a job, oldest first. */
export async function jobEventRows(db, id) {
    if (!isJobId(id))
        return [];
    const { rows } = await sql `
    SELECT at, kind, attempt, worker, actor, detail FROM job_event WHERE job_id = ${id}::bigint ORDER BY id`.execute(db.kysely);
    return rows;
}
//# sourceMappingURL=events.js.map