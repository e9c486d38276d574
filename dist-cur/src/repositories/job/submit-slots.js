import { sql } from 'kysely';
import { jobFromRow } from './row.js';
const isoOf = (d) => (d === null ? null : d.toISOString());
/**
 * Inserts a job of the task for each slot (backfill), reading type, group, args and so on from the
 * task row; a slot that has a job already gets none (the unique (task, slot) key). Returns the jobs
 * inserted, in slot order.
 */
export async function jobSubmitSlots(db, taskId, items, now) {
    if (items.length === 0)
        return [];
    const { rows } = await sql `
    INSERT INTO job (type, group_, args, subject, submitter, priority, run_at, max_attempts,
                     periodic_task_id, scheduled_at, timebox, run_interval, run_tolerance,
                     created_at, updated_at)
    SELECT t.task, t.group_, t.args, t.subject, t.submitter, t.priority, x.run_at, t.max_attempts,
           t.id, x.slot, x.timebox, x.run_interval, x.run_tolerance, ${now}, ${now}
      FROM unnest(${items.map((i) => isoOf(i.runAt))}::timestamptz[],
                  ${items.map((i) => isoOf(i.scheduledAt))}::timestamptz[],
                  ${items.map((i) => i.timebox)}::bigint[],
                  ${items.map((i) => i.runInterval)}::bigint[],
                  ${items.map((i) => i.runTolerance)}::bigint[]) AS x(run_at, slot, timebox, run_interval, run_tolerance)
      CROSS JOIN periodic_task t
     WHERE t.id = ${taskId}
     ORDER BY x.slot
    ON CONFLICT (periodic_task_id, scheduled_at) WHERE periodic_task_id IS NOT NULL DO NOTHING
    RETURNING *`.execute(db.kysely);
    return rows.map(jobFromRow).sort((a, b) => (a.scheduledAt?.getTime() ?? 0) - (b.scheduledAt?.getTime() ?? 0));
}
//# sourceMappingURL=submit-slots.js.map