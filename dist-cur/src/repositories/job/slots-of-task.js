import { sql } from 'kysely';
/** The slots in [from, to) of a task that already have a job. */
export async function jobSlotsOfTask(db, taskId, from, to) {
    const { rows } = await sql `
    SELECT scheduled_at FROM job
     WHERE periodic_task_id = ${taskId} AND scheduled_at >= ${from} AND scheduled_at < ${to}`.execute(db.kysely);
    return rows.map((r) => r.scheduled_at);
}
//# sourceMappingURL=slots-of-task.js.map