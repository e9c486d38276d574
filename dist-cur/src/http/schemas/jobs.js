/**
 * Jobs and the worker protocol: the single source of request validation and of the OpenAPI
 * document. Bodies are strict: an unknown field is a 400, and so is a read-only one, with a message
 * saying so.
 */
import { z } from 'zod';
import { body, INT32_MAX, MAX_NAME, name, Priority, Timestamp } from './common.js';
import { formatDuration, MAX_DURATION_MS } from '../../domain/duration.js';
import { durationString } from './duration.js';
import { debounceFields, debounceIssues } from './job-debounce.js';
import { JOB_STATES, MAX_AFTER, MAX_BATCH, MAX_UNIQUE_FOR_MS } from '../../domain/job.js';
export { durationString } from './duration.js';
export const LeaseToken = z
    .uuid({ error: 'expected the leaseToken (a UUID) that POST /jobs/next handed out' })
    .meta({ description: 'The fencing token of the lease, from POST /jobs/next.', example: '3f1c2b9e-8d4a-4c6b-9a51-2b7e0c1d5f00' });
export const AnyJson = (description, example) => z.unknown().meta({ description, example });
const readOnlyJobFields = (fields, message) => Object.fromEntries(fields.map((f) => [f, message(f)]));
const JOB_READ_ONLY = readOnlyJobFields([
    'id',
    'state',
    'attempts',
    'periodicTaskId',
    'scheduledAt',
    'worker',
    'startedAt',
    'leaseExpiresAt',
    'deadline',
    'finishedAt',
    'progress',
    'result',
    'error',
    'createdAt',
    'updatedAt',
    'leaseToken',
    'taskState',
    'checkpoint',
], (f) => `"${f}" is read-only`);
// ---------------------------------------------------------------------------------------------
// Responses
/**
 * A timestamp in a response: ISO 8601 UTC with milliseconds. The DTOs below write Dates as strings
 * themselves: JSON.stringify on Date objects is several times slower, which shows on 1000-job answers.
 */
export const When = z.string().meta({ format: 'date-time', example: '2026-11-20T09:00:00.000Z' });
const isoMemo = new Map();
export function isoOf(d) {
    if (d === null)
        return null;
    const t = d.getTime();
    let iso = isoMemo.get(t);
    if (iso === undefined) {
        if (isoMemo.size >= 256)
            isoMemo.clear();
        iso = d.toISOString();
        isoMemo.set(t, iso);
    }
    return iso;
}
export const JobSchema = z
    .object({
    id: z.string().meta({ description: 'Assigned by jobclock.', example: '1042' }),
    type: z.string().meta({ example: 'mail.send' }),
    group: z.string().meta({ example: 'default' }),
    args: z.unknown().meta({ description: 'Any JSON, handed to the worker.', example: { to: 'ada@example.com' } }),
    subject: z.string().nullable(),
    submitter: z.string().nullable(),
    priority: z.number().int(),
    state: z.enum(JOB_STATES),
    runAt: When.meta({ description: 'Not leased before this time.' }),
    attempts: z.number().int().meta({ description: 'Leases so far.' }),
    maxAttempts: z.number().int(),
    uniqueKey: z.string().nullable(),
    periodicTaskId: z.string().nullable(),
    scheduledAt: When.nullable().meta({ description: 'For a job of a periodic task: the scheduled time it was submitted for.' }),
    timebox: z.string().nullable().meta({ description: 'How long a run may take; the deadline is startedAt + timebox.', example: '30s' }),
    worker: z.string().nullable().meta({ description: 'The worker of the latest lease.' }),
    startedAt: When.nullable(),
    leaseExpiresAt: When.nullable(),
    deadline: When.nullable(),
    finishedAt: When.nullable(),
    progress: z.unknown().meta({ description: 'The latest progress a heartbeat reported.' }),
    result: z.unknown(),
    error: z
        .unknown()
        .meta({ description: 'The latest error: reported by the worker, or recorded by jobclock (kind lease_expired, timebox, dropped).' }),
    createdAt: When,
    updatedAt: When,
    traceparent: z
        .string()
        .nullable()
        .meta({ description: 'W3C Trace Context of the request that created the job; a worker continues the trace from it.' }),
    checkpoint: z.unknown().meta({
        description: 'The state a worker saved (heartbeat, release or report) for the next attempt of this one-shot job; null if none.',
    }),
    startBy: When.nullable().meta({ description: 'Not handed out at or after this moment: the job ends dropped (reason expired).' }),
    after: z
        .array(z.string())
        .meta({ description: 'The jobs it runs after (ids); empty for a job without dependencies.', example: ['1040', '1041'] }),
    onDependencyFailure: z.enum(['cancel', 'run']).meta({
        description: 'What it does when a job it runs after ends failed, dropped or cancelled: `cancel` (the default) or `run` anyway.',
    }),
})
    .meta({
    id: 'Job',
    description: 'A one-shot job.',
    example: {
        id: '1042',
        type: 'mail.send',
        group: 'default',
        args: { to: 'ada@example.com' },
        subject: 'welcome mail',
        submitter: 'signup',
        priority: 0,
        state: 'queued',
        runAt: '2026-11-20T09:00:00.000Z',
        attempts: 0,
        maxAttempts: 3,
        uniqueKey: null,
        periodicTaskId: null,
        scheduledAt: null,
        timebox: '30s',
        worker: null,
        startedAt: null,
        leaseExpiresAt: null,
        deadline: null,
        finishedAt: null,
        progress: null,
        result: null,
        error: null,
        createdAt: '2026-11-20T08:59:59.120Z',
        updatedAt: '2026-11-20T08:59:59.120Z',
        traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
        checkpoint: null,
        startBy: null,
        after: [],
        onDependencyFailure: 'cancel',
    },
});
/** The API's view of a job. */
export function jobDto(job) {
    return {
        id: job.id,
        type: job.type,
        group: job.group,
        args: job.args,
        subject: job.subject,
        submitter: job.submitter,
        priority: job.priority,
        state: job.state,
        runAt: isoOf(job.runAt),
        attempts: job.attempts,
        maxAttempts: job.maxAttempts,
        uniqueKey: job.uniqueKey,
        periodicTaskId: job.periodicTaskId,
        scheduledAt: isoOf(job.scheduledAt),
        timebox: job.timebox === null ? null : formatDuration(job.timebox),
        worker: job.worker,
        startedAt: isoOf(job.startedAt),
        leaseExpiresAt: isoOf(job.leaseExpiresAt),
        deadline: isoOf(job.deadline),
        finishedAt: isoOf(job.finishedAt),
        progress: job.progress,
        result: job.result,
        error: job.error,
        createdAt: isoOf(job.createdAt),
        updatedAt: isoOf(job.updatedAt),
        traceparent: job.traceparent,
        checkpoint: job.checkpoint,
        startBy: isoOf(job.startBy),
        after: job.after,
        onDependencyFailure: job.onDependencyFailure,
    };
}
export const JobListSchema = z
    .object({
    items: z.array(JobSchema),
    nextCursor: z
        .string()
        .nullable()
        .meta({
        description: 'Pass as `cursor` for the next page; null on the last page. A content search (`q`, `argsContains`) behind ' +
            'a large backlog of queued jobs may end a page early, with fewer items than `limit` (even none) and a ' +
            'nextCursor: every job above it was looked at, and the next page goes on below it.',
    }),
})
    .meta({ id: 'JobList' });
// ---------------------------------------------------------------------------------------------
// Producers
const NullableText = z.string().nullable().optional();
/** W3C Trace Context `traceparent`: version-traceid-parentid-flags, lower-case hex, ids not all zero. */
export const TRACEPARENT_PATTERN = /^[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;
const Traceparent = z
    .string()
    .regex(TRACEPARENT_PATTERN, 'traceparent must be W3C Trace Context: 00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>')
    .refine((s) => !s.startsWith('ff'), 'traceparent version ff is invalid')
    .meta({ example: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' });
export const CreateJobBody = body({
    type: name('type', 'mail.send').meta({ description: 'What kind of work; workers lease by type.' }),
    args: AnyJson('Any JSON, handed to the worker.', { to: 'ada@example.com' }).optional(),
    group: name('group', 'default').optional().meta({ description: 'Default `default`; workers may lease by group.' }),
    priority: Priority.optional(),
    runAt: Timestamp.optional().meta({ description: 'Not leased before this time; default now.' }),
    maxAttempts: z.number().int().min(1).max(INT32_MAX).optional().meta({ description: 'Default 3.', example: 3 }),
    uniqueKey: name('uniqueKey', 'welcome:ada@example.com')
        .nullable()
        .optional()
        .meta({ description: 'While a queued or running job has this key, creating another returns that job (200).' }),
    timebox: durationString({ minMs: 1, maxMs: MAX_DURATION_MS, description: 'How long a run may take.', example: '30s' })
        .nullable()
        .optional(),
    subject: NullableText.meta({ description: 'What the job is about, for people and search.' }),
    submitter: NullableText.meta({ description: 'Who submitted it.' }),
    traceparent: Traceparent.nullable()
        .optional()
        .meta({ description: "W3C Trace Context; default: the request's traceparent header. Handed to the worker with the lease." }),
    startBy: Timestamp.nullable()
        .optional()
        .meta({ description: 'Never handed out at or after this moment: a job not leased by then ends dropped (reason expired).' }),
    uniqueFor: durationString({
        minMs: 1,
        maxMs: MAX_UNIQUE_FOR_MS,
        description: 'With uniqueKey: the key also matches a finished, failed, dropped or cancelled job created within this long (200 with that job), ' +
            'so that a retried POST creates no duplicate. At most 30d.',
        example: '24h',
    }).optional(),
    ...debounceFields,
    ref: name('ref', 'render-page-1').optional().meta({
        description: 'In POST /jobs/batch: a name, unique in the batch, by which other bodies of the batch name this one in `after`.',
    }),
    after: z
        .array(name('after', '1040'))
        .max(MAX_AFTER, `at most ${MAX_AFTER} dependencies`)
        .optional()
        .meta({
        description: 'Jobs that must end before this one runs: job ids, or in POST /jobs/batch the `ref` of another body of the batch. Until they have all finished the job is `waiting`.',
        example: ['render-page-1', 'render-page-2'],
    }),
    onDependencyFailure: z.enum(['cancel', 'run']).optional().meta({
        description: 'When a job it runs after ends failed, dropped or cancelled: `cancel` (default; the job is cancelled, reason dependency-failed) or `run` (it runs once all have ended).',
    }),
}, JOB_READ_ONLY)
    .superRefine((b, ctx) => {
    if (b.uniqueFor !== undefined && (b.uniqueKey === undefined || b.uniqueKey === null)) {
        ctx.addIssue({ code: 'custom', path: ['uniqueFor'], message: 'uniqueFor needs a uniqueKey' });
    }
    debounceIssues(b).forEach(([field, message]) => ctx.addIssue({ code: 'custom', path: [field], message }));
    const inGraph = b.ref !== undefined || (b.after !== undefined && b.after.length > 0);
    if (inGraph && b.uniqueKey !== undefined && b.uniqueKey !== null) {
        ctx.addIssue({ code: 'custom', path: ['uniqueKey'], message: 'a job with ref or after cannot carry a uniqueKey' });
    }
})
    .meta({
    id: 'CreateJob',
    additionalProperties: false,
    example: { type: 'mail.send', args: { to: 'ada@example.com' }, priority: 5, timebox: '30s', uniqueKey: 'welcome:ada@example.com' },
});
export const CreateJobBatchBody = z
    .strictObject({
    jobs: z.array(CreateJobBody).min(1, 'send at least one job').max(MAX_BATCH, `at most ${MAX_BATCH} jobs per batch`),
})
    .meta({
    id: 'CreateJobBatch',
    description: 'All or nothing: one bad job rejects the batch, its index in the error path (`/jobs/3/type`).',
    example: {
        jobs: [
            { type: 'mail.send', args: { to: 'ada@example.com' } },
            { type: 'mail.send', args: { to: 'alan@example.com' } },
        ],
    },
});
export const JobBatchSchema = z.object({ jobs: z.array(JobSchema) }).meta({ id: 'JobBatch' });
/** POST /jobs/batch with `Prefer: return=minimal` (RFC 7240): only the new jobs' ids, in order. */
export const JobBatchMinimalSchema = z
    .object({ jobs: z.array(z.object({ id: z.string().meta({ example: '1042' }) })) })
    .meta({ id: 'JobBatchMinimal' });
export const PreferHeaders = z.object({
    prefer: z.string().optional().meta({
        description: '`return=minimal` (RFC 7240): answer only the ids of the created jobs, in the order given (a bulk load has no use for 1000 jobs echoed back); `Preference-Applied` says so.',
        example: 'return=minimal',
    }),
});
/** Whether the request asked `Prefer: return=minimal`. */
export const prefersMinimal = (prefer) => prefer !== undefined && /(^|[\s,;])return\s*=\s*minimal(\s*($|[,;]))/i.test(prefer);
export const JobIdParams = z.strictObject({ id: z.string().meta({ example: '1042' }) });
/** A JSON object whose every member a job's args must contain (PostgreSQL's `@>`). */
const ArgsContainsObject = z
    .record(z.string(), z.unknown())
    .meta({ description: "Jobs whose args contain this JSON object (as PostgreSQL's @>).", example: { customer: 42 } });
/** In a query string the object comes as JSON text. */
const ArgsContainsText = z
    .string()
    .max(10_000)
    .transform((text, ctx) => {
    let value;
    try {
        value = JSON.parse(text);
    }
    catch {
        ctx.addIssue({ code: 'custom', message: 'argsContains must be a JSON object, like {"customer":42}' });
        return z.NEVER;
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        ctx.addIssue({ code: 'custom', message: 'argsContains must be a JSON object, like {"customer":42}' });
        return z.NEVER;
    }
    return value;
})
    .meta({ description: "A JSON object (URL-encoded): jobs whose args contain it, as PostgreSQL's @>.", example: '{"customer":42}' });
/** The filters of GET /jobs, shared with the bulk actions. */
const jobFilterShape = {
    state: z.enum(JOB_STATES).optional(),
    type: name('type', 'mail.send').optional(),
    group: name('group', 'default').optional(),
    periodicTaskId: name('periodicTaskId', 'nightly-report').optional(),
    worker: name('worker', 'worker-7').optional(),
    q: z.string().min(1).max(MAX_NAME).optional().meta({ description: 'Case-insensitive text searched in args, subject and error.' }),
    createdAfter: Timestamp.optional().meta({ description: 'Only jobs created at or after this time.' }),
    createdBefore: Timestamp.optional().meta({ description: 'Only jobs created before this time.' }),
};
export const JobListQuery = z.strictObject({
    ...jobFilterShape,
    argsContains: ArgsContainsText.optional(),
    limit: z.coerce
        .number({ error: 'limit must be a whole number from 1 to 1000' })
        .int('limit must be a whole number from 1 to 1000')
        .min(1, 'limit must be at least 1')
        .max(1000, 'limit must be at most 1000')
        .default(100),
    cursor: z.string().min(1).max(100).optional().meta({ description: 'nextCursor of the previous page.' }),
});
export const MAX_BULK = 10_000;
export const BulkActionBody = z
    .strictObject({
    filter: z.strictObject({ ...jobFilterShape, argsContains: ArgsContainsObject.optional() }).meta({
        description: 'The GET /jobs filters. Cancel acts on the queued and running jobs among them, retry on the failed, dropped and cancelled ones.',
    }),
    limit: z
        .number()
        .int()
        .min(1, 'limit must be at least 1')
        .max(MAX_BULK, `limit must be at most ${MAX_BULK}`)
        .optional()
        .meta({ description: `Most jobs acted on; default and maximum ${MAX_BULK}.` }),
})
    .meta({ id: 'BulkAction', example: { filter: { type: 'mail.send', state: 'failed' }, limit: 500 } });
export const BulkActionResponse = z
    .object({ affected: z.number().int().meta({ description: 'Jobs the action changed.' }) })
    .meta({ id: 'BulkActionResult' });
export const PatchJobBody = body({
    priority: Priority.optional(),
    runAt: Timestamp.optional(),
}, {
    ...JOB_READ_ONLY,
    ...readOnlyJobFields(['type', 'group', 'args', 'maxAttempts', 'uniqueKey', 'timebox', 'subject', 'submitter'], (f) => `"${f}" cannot be changed after creation; only priority and runAt can`),
}).meta({ id: 'PatchJob', additionalProperties: false, description: 'Only for a queued job.', example: { priority: 10 } });
//# sourceMappingURL=jobs.js.map