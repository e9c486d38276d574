import { sql } from 'kysely';
import { jobFromRow } from './row.js';
const isoOf = (d) => (d === null ? null : d.toISOString());
/** Inserts one job for a task, reading its type, group, args and so on from the task row, and returns it whole (trigger). */
export async function jobSubmitForTask(db, item, now) {
    const { rows } = await sql `
    INSERT INTO job (type, group_, args, subject, submitter, priority, run_at, max_attempts,
                     periodic_task_id, scheduled_at, timebox, run_interval, run_tolerance,
                     created_at, updated_at)
    SELECT t.task, t.group_, t.args, t.subject, t.submitter, t.priority, ${item.runAt}, t.max_attempts,
           t.id, ${isoOf(item.scheduledAt)}::timestamptz, ${item.timebox}::bigint, ${item.runInterval}::bigint,
           ${item.runTolerance}::bigint, ${now}, ${now}
      FROM periodic_task t
     WHERE t.id = ${item.taskId}
    RETURNING *`.execute(db.kysely);
    return rows[0] ? jobFromRow(rows[0]) : null;
}
//# sourceMappingURL=submit-for-task.js.map