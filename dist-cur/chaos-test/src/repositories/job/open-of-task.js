/** The id of a queued or running job of a task, if any (job_open_by_task_idx). */
export async function jobOpenOfTask(db, taskId) {
    const row = await db.kysely
        .selectFrom('job')
        .select('id')
        .where('periodic_task_id', '=', taskId)
        .where('state', 'in', ['queued', 'running'])
        .limit(1)
        .executeTakeFirst();
    return row ? String(row.id) : null;
}
//# sourceMappingURL=open-of-task.js.map