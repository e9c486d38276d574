import { z } from 'zod';
import { formatDuration } from '../../domain/duration.js';
import { CONCURRENCY_POLICIES, DEFAULT_CATCH_UP_LIMIT, MAX_CATCH_UP_LIMIT, MAX_TASK_ATTEMPTS, MISFIRE_POLICIES, TASK_ID_PATTERN, } from '../../domain/periodic-task.js';
import { HEALTH_STATUSES } from '../../domain/task-health.js';
import { RUN_OUTCOMES } from '../../domain/run-ledger.js';
import { body, name, Priority, Timestamp as TimestampIn } from './common.js';
const TaskId = z
    .string()
    .regex(TASK_ID_PATTERN, 'id must be 1 to 200 characters of A-Z, a-z, 0-9, ".", "_", ":" and "-"')
    .meta({ description: 'Client-chosen id; generated (a UUID) when absent', example: 'mail-channel-42:poll' });
const Timestamp = z.iso
    .datetime({ offset: true, message: 'expected an ISO 8601 timestamp like 2026-11-20T09:00:00.000Z' })
    .meta({ example: '2026-11-20T09:00:00.000Z' });
const Duration = z
    .string()
    .max(100)
    .meta({ description: 'Go-style (`500ms`, `12s`, `1h30m`, `2d`) or ISO 8601 (`PT12S`)', example: '30s' });
const Misfire = z.enum(MISFIRE_POLICIES).meta({
    description: 'What the scheduler does with runs it missed (jobclock down, the database away): coalesce (default) submits one run for them, ' +
        'skip submits none (a due run more than 1 minute late is missed too), catch-up submits each missed run, oldest first, at most catchUpLimit (the most recent ones)',
    example: 'coalesce',
});
const CatchUpLimit = z
    .number()
    .int()
    .min(1, 'catchUpLimit must be at least 1')
    .max(MAX_CATCH_UP_LIMIT, `catchUpLimit must be at most ${MAX_CATCH_UP_LIMIT}`)
    .meta({ description: `misfirePolicy catch-up: the most missed runs submitted at once (default ${DEFAULT_CATCH_UP_LIMIT})`, example: 10 });
const Policy = z.enum(CONCURRENCY_POLICIES).meta({
    description: 'forbid (default): no new job while one of this task is queued or running (nextRun still advances); ' +
        'allow: a job at every run, dropped at lease time if it would begin before lastRun + interval − tolerance; ' +
        'replace: cancel the queued or running job and submit a new one',
});
const writable = {
    task: name('task').meta({ description: 'The job type it submits', example: 'mail.poll' }),
    group: name('group').meta({ description: 'Job group (default `default`)' }),
    args: z.unknown().meta({ description: 'Any JSON, handed to each job' }),
    subject: z.string().nullable(),
    submitter: z.string().nullable(),
    priority: Priority,
    owner: name('owner').nullable().meta({ description: 'What the task belongs to, e.g. `channel:42`', example: 'channel:42' }),
    enabled: z.boolean(),
    schedule: z.string().meta({
        description: '`every <duration> [offset <duration>]`, a cron expression (5 or 6 fields), or a systemd calendar event',
        example: 'every 5m',
    }),
    timezone: z
        .string()
        .max(100)
        .meta({ description: 'IANA time zone for cron and calendar schedules (default UTC)', example: 'Europe/Berlin' }),
    firstRunAt: Timestamp.nullable().meta({
        description: 'Interval schedules run at firstRunAt + k·every (k ≥ 0); cron and calendar: no run before it',
    }),
    tolerance: Duration.nullable().meta({ description: 'null: the default min(5s, interval/10)' }),
    timebox: Duration.nullable().meta({
        description: 'null: the default, half the interval (cron/calendar: half the time to the following occurrence)',
    }),
    concurrencyPolicy: Policy,
    misfirePolicy: Misfire,
    catchUpLimit: CatchUpLimit,
    maxAttempts: z
        .number()
        .int('maxAttempts must be a whole number')
        .min(1, 'maxAttempts must be at least 1')
        .max(MAX_TASK_ATTEMPTS, `maxAttempts must be at most ${MAX_TASK_ATTEMPTS}`)
        .meta({
        description: 'Attempts of each run (default 1). A failed run with attempts left is queued again after the backoff (or the worker’s retryIn); ' +
            'a retry still queued when the next slot comes due is dropped (reason next-run-due) and the new slot is planned as if no job were open',
        example: 3,
    }),
    catchUpWindow: Duration.nullable().meta({
        description: 'A slot more than this old when the scheduler reaches it is never submitted, whatever misfirePolicy: it is recorded as missed. null: no limit',
        example: '1h',
    }),
    endAt: Timestamp.nullable().meta({
        description: 'No slot at or after it; once past, nextRun is null and the task stays for its history. null: no end',
    }),
    alertAfter: Duration.nullable().meta({
        description: 'The dead man’s switch: health becomes overdue when no run has finished for this long after a slot came due. null: never overdue',
        example: '2h',
    }),
};
/** Fields the service owns; sending one in a body is a 400 naming it. */
export const TASK_READ_ONLY_FIELDS = [
    'nextRun',
    'lastRun',
    'worker',
    'marked',
    'state',
    'createdAt',
    'updatedAt',
    'effectiveTolerance',
    'effectiveTimebox',
    'health',
    'recentRuns',
];
const readOnly = (fields) => Object.fromEntries(fields.map((f) => [f, `"${f}" is read-only`]));
/** Every writable field, optional: what PATCH takes. */
const optionalWritable = Object.fromEntries(Object.entries(writable).map(([k, v]) => [k, v.optional()]));
export const TaskCreateBodySchema = body({ id: TaskId.optional(), ...optionalWritable, task: writable.task, schedule: writable.schedule }, readOnly(TASK_READ_ONLY_FIELDS)).meta({ id: 'PeriodicTaskCreate' });
export const TaskPatchBodySchema = body(optionalWritable, readOnly(['id', ...TASK_READ_ONLY_FIELDS])).meta({
    id: 'PeriodicTaskPatch',
    description: 'Any writable field; null resets a nullable one (tolerance and timebox to their defaults)',
});
const NullableTimestamp = z.string().nullable();
export const HealthSchema = z
    .object({
    status: z.enum(HEALTH_STATUSES).meta({
        description: 'First match wins: disabled (enabled is false); overdue (alertAfter is set and no run has finished for longer than alertAfter after a slot came due); ' +
            'failing (the last run that ended did not finish: it failed, timed out or was dropped); ok',
    }),
    lastSuccessAt: NullableTimestamp.meta({ description: 'When a run last finished' }),
    lastFailureAt: NullableTimestamp.meta({ description: 'When a run last failed, timed out or was dropped' }),
    consecutiveFailures: z.number().int().meta({ description: 'Runs that ended without finishing since the last one that finished' }),
})
    .meta({ id: 'TaskHealth', description: 'Read-only: what the task’s runs have come to' });
export const RunSchema = z
    .object({
    slot: z.string().meta({ description: 'The slot (a triggered job: the moment it was submitted)' }),
    outcome: z.enum(RUN_OUTCOMES).meta({
        description: 'pending (its job is queued or running, or the slot is due and about to be submitted: detail.due), finished, failed, dropped, cancelled (the outcome of its job), ' +
            'skipped (not submitted: under forbid an open job of the task existed, detail.blockedBy), missed (not submitted: the service was down or behind and misfirePolicy or catchUpWindow left it out)',
    }),
    jobId: z.string().nullable(),
    attempts: z.number().int().nullable(),
    startedAt: NullableTimestamp,
    finishedAt: NullableTimestamp,
    detail: z.record(z.string(), z.unknown()).meta({ description: 'blockedBy, trigger, due, reason, error' }),
})
    .meta({ id: 'TaskRun' });
export const PeriodicTaskSchema = z
    .object({
    id: z.string(),
    task: z.string(),
    group: z.string(),
    args: z.unknown(),
    subject: z.string().nullable(),
    submitter: z.string().nullable(),
    priority: z.number().int(),
    owner: z.string().nullable(),
    enabled: z.boolean(),
    schedule: z.string(),
    timezone: z.string(),
    firstRunAt: NullableTimestamp,
    tolerance: z.string().nullable().meta({ description: 'As set; null when the default applies (see effectiveTolerance)' }),
    timebox: z.string().nullable().meta({ description: 'As set; null when the default applies (see effectiveTimebox)' }),
    concurrencyPolicy: Policy,
    misfirePolicy: Misfire,
    catchUpLimit: z.number().int(),
    maxAttempts: z.number().int(),
    catchUpWindow: z.string().nullable(),
    endAt: NullableTimestamp,
    alertAfter: z.string().nullable(),
    health: HealthSchema,
    effectiveTolerance: z
        .string()
        .nullable()
        .meta({ description: 'Read-only: the tolerance in effect for the next run, default included' }),
    effectiveTimebox: z.string().nullable().meta({ description: 'Read-only: the timebox in effect for the next run, default included' }),
    nextRun: NullableTimestamp.meta({
        description: 'Read-only: the next scheduled time; null while disabled or when the schedule never fires again',
    }),
    lastRun: NullableTimestamp.meta({ description: 'Read-only: when a job of this task last began executing' }),
    worker: z
        .string()
        .nullable()
        .meta({
        description: 'Read-only; stays null. A scheduler instance marks a task it submits with a row lock that lives only as long as ' +
            'the submitting transaction, so no instance is recorded here.',
    }),
    marked: NullableTimestamp.meta({ description: 'Read-only; stays null, as `worker` does.' }),
    state: z.unknown().meta({ description: 'Read-only: state saved by the last run, handed to the next job as taskState' }),
    createdAt: z.string(),
    updatedAt: z.string(),
    recentRuns: z
        .array(RunSchema)
        .optional()
        .meta({ description: 'GET /periodic-tasks with `runs=n` only: the newest n entries of the run ledger' }),
})
    .meta({ id: 'PeriodicTask' });
export const TaskPageSchema = z.object({
    items: z.array(PeriodicTaskSchema),
    nextCursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the next page; null on the last page' }),
});
/** A page size: 1..1000, default 100. */
const PageLimit = z.coerce
    .number({ message: 'limit must be a number' })
    .int('limit must be a whole number')
    .min(1, 'limit must be at least 1')
    .max(1000, 'limit must be at most 1000')
    .default(100);
export const TaskListQuerySchema = z.strictObject({
    owner: name('owner').optional(),
    task: name('task').optional(),
    enabled: z
        .enum(['true', 'false'], { message: 'enabled must be true or false' })
        .transform((v) => v === 'true')
        .optional(),
    health: z
        .enum(HEALTH_STATUSES, { message: `health must be one of ${HEALTH_STATUSES.join(', ')}` })
        .optional()
        .meta({ description: 'Only tasks whose health.status is this' }),
    runs: z.coerce
        .number({ message: 'runs must be a number' })
        .int('runs must be a whole number')
        .min(1, 'runs must be at least 1')
        .max(100, 'runs must be at most 100')
        .optional()
        .meta({ description: 'Also the newest `runs` entries of each task’s run ledger, as `recentRuns` (a dashboard’s strips)' }),
    limit: PageLimit,
    cursor: z.string().min(1).max(1000).optional(),
});
export const TaskDeleteByOwnerQuerySchema = z.strictObject({
    owner: name('owner').meta({ description: 'Required: deletes every task of this owner' }),
});
/** Routes that take no query parameters still refuse unknown ones. */
export const NoQuerySchema = z.strictObject({});
export const TaskIdParamsSchema = z.object({ id: z.string().max(1000) });
export const DeletedSchema = z.object({ deleted: z.number().int() });
const iso = (d) => (d === null ? null : d.toISOString());
const duration = (ms) => (ms === null ? null : formatDuration(ms));
export function taskToJson(t) {
    return {
        id: t.id,
        task: t.task,
        group: t.group,
        args: t.args,
        subject: t.subject,
        submitter: t.submitter,
        priority: t.priority,
        owner: t.owner,
        enabled: t.enabled,
        schedule: t.schedule,
        timezone: t.timezone,
        firstRunAt: iso(t.firstRunAt),
        tolerance: duration(t.tolerance),
        timebox: duration(t.timebox),
        concurrencyPolicy: t.concurrencyPolicy,
        misfirePolicy: t.misfirePolicy,
        catchUpLimit: t.catchUpLimit,
        maxAttempts: t.maxAttempts,
        catchUpWindow: duration(t.catchUpWindow),
        endAt: iso(t.endAt),
        alertAfter: duration(t.alertAfter),
        health: {
            status: t.health.status,
            lastSuccessAt: iso(t.health.lastSuccessAt),
            lastFailureAt: iso(t.health.lastFailureAt),
            consecutiveFailures: t.health.consecutiveFailures,
        },
        effectiveTolerance: duration(t.effectiveTolerance),
        effectiveTimebox: duration(t.effectiveTimebox),
        nextRun: iso(t.nextRun),
        lastRun: iso(t.lastRun),
        worker: t.worker,
        marked: iso(t.marked),
        state: t.state,
        createdAt: t.createdAt.toISOString(),
        updatedAt: t.updatedAt.toISOString(),
    };
}
export const RunsQuerySchema = z.strictObject({
    from: TimestampIn.optional().meta({ description: 'The oldest slot listed (inclusive); default: the task’s first' }),
    to: TimestampIn.optional().meta({ description: 'The newest slot listed (inclusive); default and at most: now' }),
    limit: PageLimit,
    cursor: z.string().min(1).max(1000).optional(),
});
export const RunPageSchema = z
    .object({
    items: z.array(RunSchema),
    nextCursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the next (older) page; null on the last page' }),
})
    .meta({ id: 'TaskRunPage' });
export function runToJson(r) {
    return {
        slot: r.slot.toISOString(),
        outcome: r.outcome,
        jobId: r.jobId,
        attempts: r.attempts,
        startedAt: iso(r.startedAt),
        finishedAt: iso(r.finishedAt),
        detail: r.detail,
    };
}
//# sourceMappingURL=periodic-tasks.js.map