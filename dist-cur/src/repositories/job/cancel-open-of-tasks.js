import { sql } from 'kysely';
import { replacedEvents, replacedSet } from './replaced.js';
/** Cancels the queued and running jobs of the given tasks (policy replace). */
export async function jobCancelOpenOfTasks(db, taskIds, now) {
    if (taskIds.length === 0)
        return [];
    const { rows } = await sql `
    WITH cancelled AS (
      UPDATE job
         SET ${replacedSet(now)}
       WHERE periodic_task_id = ANY(${taskIds}::text[]) AND state IN ('queued', 'running')
      RETURNING id, periodic_task_id, lease_token, attempts, worker, error
    ),
    events AS (${replacedEvents('cancelled', now)})
    SELECT id, periodic_task_id FROM cancelled`.execute(db.kysely);
    return rows.map((r) => ({ id: String(r.id), periodicTaskId: r.periodic_task_id }));
}
//# sourceMappingURL=cancel-open-of-tasks.js.map