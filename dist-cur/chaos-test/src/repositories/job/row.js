import { sql } from 'kysely';
/** Every column of `job`, in table order (for statements that pick each column from two sources). */
export const JOB_COLUMNS = [
    'id',
    'type',
    'group_',
    'args',
    'subject',
    'submitter',
    'priority',
    'state',
    'run_at',
    'attempts',
    'max_attempts',
    'unique_key',
    'periodic_task_id',
    'scheduled_at',
    'timebox',
    'run_interval',
    'run_tolerance',
    'worker',
    'lease_token',
    'lease_expires_at',
    'lease_duration',
    'started_at',
    'deadline',
    'finished_at',
    'progress',
    'result',
    'error',
    'created_at',
    'updated_at',
    'traceparent',
    'checkpoint',
    'start_by',
    'debounce_key',
    'after_ids',
    'dependency_failure_runs',
];
/**
 * The job columns of `alias`, listed: statements run as prepared statements name their output
 * columns instead of `*`, so that a later migration adding a column cannot change the result type
 * of a statement a running instance has prepared.
 */
export const jobCols = (alias) => sql.join(JOB_COLUMNS.map((c) => sql.ref(`${alias}.${c}`)));
/** Shared by every job without dependencies (never mutated). */
const NO_DEPENDENCIES = [];
/** The API's view of a row. JSON null and SQL NULL both read as null. */
export function jobFromRow(r) {
    return {
        id: String(r.id),
        type: r.type,
        group: r.group_,
        args: r.args ?? null,
        subject: r.subject,
        submitter: r.submitter,
        priority: r.priority,
        state: r.state,
        runAt: r.run_at,
        attempts: r.attempts,
        maxAttempts: r.max_attempts,
        uniqueKey: r.unique_key ?? r.debounce_key,
        periodicTaskId: r.periodic_task_id,
        scheduledAt: r.scheduled_at,
        timebox: r.timebox === null ? null : Number(r.timebox),
        worker: r.worker,
        startedAt: r.started_at,
        leaseExpiresAt: r.lease_expires_at,
        deadline: r.deadline,
        finishedAt: r.finished_at,
        progress: r.progress ?? null,
        result: r.result ?? null,
        error: r.error ?? null,
        createdAt: r.created_at,
        updatedAt: r.updated_at,
        traceparent: r.traceparent,
        checkpoint: r.checkpoint ?? null,
        startBy: r.start_by,
        after: r.after_ids === null ? NO_DEPENDENCIES : r.after_ids.map(String),
        onDependencyFailure: r.dependency_failure_runs ? 'run' : 'cancel',
    };
}
export function leasedFromRow(r, taskState, slot) {
    const job = jobFromRow(r);
    job.leaseToken = r.lease_token;
    job.taskState = taskState;
    job.slot = slot;
    return job;
}
/** Job ids are bigint identities; anything else names no job. */
const ID_PATTERN = /^[1-9][0-9]{0,17}$/;
export const isJobId = (id) => ID_PATTERN.test(id);
//# sourceMappingURL=row.js.map