/**
 * The run ledger's reads (GET /periodic-tasks/{id}/runs) and the records of slots that got no job:
 * every query is one index range scan in slot order, newest first, bounded by the page size, so a
 * page costs the same after a year of history as after a day.
 */
import { sql } from 'kysely';
/** The jobs of the task's slots in [from, upTo] (both inclusive), newest first, at most `limit`. */
export async function taskSlotJobs(db, taskId, from, upTo, limit) {
    const { rows } = await sql `
    SELECT id, scheduled_at AS slot, state, attempts, started_at, finished_at, error
      FROM job
     WHERE periodic_task_id = ${taskId} AND scheduled_at >= ${from} AND scheduled_at <= ${upTo}
     ORDER BY scheduled_at DESC
     LIMIT ${limit}`.execute(db.kysely);
    return rows.map((r) => ({ ...r, id: String(r.id) }));
}
/** The records that hold a slot in [from, upTo], newest first, at most `limit` (records never overlap). */
export async function taskSlotRecords(db, taskId, from, upTo, limit) {
    const { rows } = await sql `
    SELECT r.slot, r.last_slot, r.slots, r.outcome, r.job_id, r.timer, r.timezone, r.anchor, r.first_run_at,
           CASE WHEN j.id IS NOT NULL THEN jsonb_build_object('state', j.state, 'attempts', j.attempts,
             'started_at', j.started_at, 'finished_at', j.finished_at, 'error', j.error) END AS job
      FROM periodic_slot r
      LEFT JOIN job j ON r.outcome = 'triggered' AND j.id = r.job_id
     WHERE r.task_id = ${taskId} AND r.slot <= ${upTo} AND r.last_slot >= ${from}
     ORDER BY r.slot DESC
     LIMIT ${limit}`.execute(db.kysely);
    return rows.map((r) => ({ ...r, job_id: r.job_id === null ? null : String(r.job_id), job: jobOf(r.job) }));
}
/** Records a job submitted by a trigger: it is in the ledger at the moment it was submitted. */
export async function slotRecordTrigger(db, taskId, jobId, now) {
    await sql `
    INSERT INTO periodic_slot (task_id, slot, last_slot, outcome, job_id, recorded_at)
    VALUES (${taskId}, ${now}, ${now}, 'triggered', ${jobId}::bigint, ${now})
    ON CONFLICT DO NOTHING`.execute(db.kysely);
}
/** Deletes up to `limit` records made before `before` (they expire with the jobs of their time). */
export async function slotRecordDeleteOld(db, before, limit) {
    const r = await sql `
    DELETE FROM periodic_slot WHERE ctid IN (
      SELECT ctid FROM periodic_slot WHERE recorded_at < ${before} LIMIT ${limit})`.execute(db.kysely);
    return Number(r.numAffectedRows ?? 0);
}
/** The newest `limit` jobs of slots of each task at or before `upTo`: one index range per task, one statement. */
export async function taskRecentSlotJobs(db, taskIds, upTo, limit) {
    if (taskIds.length === 0)
        return [];
    const { rows } = await sql `
    SELECT t.task_id, j.id, j.scheduled_at AS slot, j.state, j.attempts, j.started_at, j.finished_at, j.error
      FROM unnest(${taskIds}::text[]) AS t(task_id)
      CROSS JOIN LATERAL (
        SELECT id, scheduled_at, state, attempts, started_at, finished_at, error FROM job
         WHERE periodic_task_id = t.task_id AND scheduled_at <= ${upTo}
         ORDER BY scheduled_at DESC LIMIT ${limit}) j`.execute(db.kysely);
    return rows.map((r) => ({ ...r, id: String(r.id) }));
}
/** The newest `limit` records of each task holding a slot at or before `upTo`, in one statement. */
export async function taskRecentSlotRecords(db, taskIds, upTo, limit) {
    if (taskIds.length === 0)
        return [];
    const { rows } = await sql `
    SELECT t.task_id, r.slot, r.last_slot, r.slots, r.outcome, r.job_id, r.timer, r.timezone, r.anchor, r.first_run_at,
           CASE WHEN j.id IS NOT NULL THEN jsonb_build_object('state', j.state, 'attempts', j.attempts,
             'started_at', j.started_at, 'finished_at', j.finished_at, 'error', j.error) END AS job
      FROM unnest(${taskIds}::text[]) AS t(task_id)
      CROSS JOIN LATERAL (
        SELECT * FROM periodic_slot WHERE task_id = t.task_id AND slot <= ${upTo} ORDER BY slot DESC LIMIT ${limit}) r
      LEFT JOIN job j ON r.outcome = 'triggered' AND j.id = r.job_id`.execute(db.kysely);
    return rows.map((r) => ({ ...r, job_id: r.job_id === null ? null : String(r.job_id), job: jobOf(r.job) }));
}
function jobOf(j) {
    if (j === null)
        return null;
    return {
        state: j.state,
        attempts: j.attempts,
        started_at: j.started_at === null ? null : new Date(j.started_at),
        finished_at: j.finished_at === null ? null : new Date(j.finished_at),
        error: j.error,
    };
}
//# sourceMappingURL=task-runs.js.map