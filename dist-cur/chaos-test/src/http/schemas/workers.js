/**
 * The worker protocol's bodies and answers (lease, heartbeat, finished, failed, batched reports):
 * validation and the OpenAPI document, as schemas/jobs.ts is for producers and readers.
 */
import { z } from 'zod';
import { body, MAX_NAME, name } from './common.js';
import { AnyJson, durationString, isoOf, jobDto, JobSchema, LeaseToken, When } from './jobs.js';
import { MAX_DURATION_MS } from '../../domain/duration.js';
import { JOB_STATES, MAX_BATCH, MAX_LEASE_LIMIT, MAX_LEASE_MS, MAX_WAIT_MS, MIN_LEASE_MS, } from '../../domain/job.js';
export const LeasedJobSchema = JobSchema.extend({
    leaseToken: z.string().meta({ description: 'Carry it in every heartbeat and report of this lease.' }),
    taskState: z.unknown().meta({ description: 'For a job of a periodic task: the state its last run saved (null otherwise).' }),
    dependencies: z
        .array(z.object({
        id: z.string(),
        type: z.string(),
        state: z.enum(JOB_STATES),
        result: z.unknown().meta({ description: 'What the dependency reported when it finished.' }),
    }))
        .optional()
        .meta({ description: 'Only for a job with `after`: how each job it runs after ended, with its result.' }),
}).meta({
    id: 'LeasedJob',
    description: 'A job handed to a worker, with its lease.',
    example: {
        id: '1042',
        type: 'mail.send',
        group: 'default',
        args: { to: 'ada@example.com' },
        subject: null,
        submitter: null,
        priority: 0,
        state: 'running',
        runAt: '2026-11-20T09:00:00.000Z',
        attempts: 1,
        maxAttempts: 3,
        uniqueKey: null,
        periodicTaskId: null,
        scheduledAt: null,
        timebox: '30s',
        worker: 'worker-7',
        startedAt: '2026-11-20T09:00:00.015Z',
        leaseExpiresAt: '2026-11-20T09:00:30.015Z',
        deadline: '2026-11-20T09:00:30.015Z',
        finishedAt: null,
        progress: null,
        result: null,
        error: null,
        createdAt: '2026-11-20T08:59:59.120Z',
        updatedAt: '2026-11-20T09:00:00.015Z',
        traceparent: null,
        checkpoint: null,
        startBy: null,
        after: [],
        onDependencyFailure: 'cancel',
        leaseToken: '3f1c2b9e-8d4a-4c6b-9a51-2b7e0c1d5f00',
        taskState: null,
    },
});
/** jobDto plus the lease, added to that object rather than spread into a copy (up to 1000 per answer). */
export function leasedJobDto(job) {
    const dto = jobDto(job);
    dto.leaseToken = job.leaseToken;
    dto.taskState = job.taskState ?? null;
    if (job.dependencies !== undefined)
        dto.dependencies = job.dependencies;
    return dto;
}
export function heartbeatDto(h) {
    return { leaseExpiresAt: isoOf(h.leaseExpiresAt), deadline: isoOf(h.deadline), cancel: h.cancel };
}
// ---------------------------------------------------------------------------------------------
// Workers
/** What a lease asks for, but its wait: POST /jobs/next and the `next` of POST /jobs/reports. */
const leaseAsk = {
    worker: name('worker', 'worker-7').meta({ description: 'Names the worker in the job and in logs.' }),
    types: z.array(name('type', 'mail.send')).min(1).max(100).optional().meta({ description: 'Only these job types.' }),
    groups: z.array(name('group', 'default')).min(1).max(100).optional().meta({ description: 'Only these groups.' }),
    lease: durationString({
        minMs: MIN_LEASE_MS,
        maxMs: MAX_LEASE_MS,
        description: 'How long the lease lasts without a heartbeat (default 30s).',
        example: '30s',
    }).optional(),
    limit: z.number().int().min(1).max(MAX_LEASE_LIMIT).optional().meta({ description: 'How many jobs at most (default 1).', example: 10 }),
};
export const LeaseBody = body({
    ...leaseAsk,
    wait: durationString({
        minMs: 0,
        maxMs: MAX_WAIT_MS,
        description: 'Long-poll: wait this long for a job before answering 204 (at most 60s; default 0).',
        example: '30s',
    }).optional(),
}, {}).meta({ id: 'LeaseRequest', additionalProperties: false, example: { worker: 'worker-7', types: ['mail.send'], wait: '30s', limit: 10 } });
const NextLease = body(leaseAsk, {
    wait: 'a report does not wait for jobs: lease the rest with POST /jobs/next and its wait',
}).meta({
    id: 'NextLease',
    additionalProperties: false,
    description: "Lease the worker's next jobs in the same transaction as the reports: the concurrency slots the reported jobs held pass " +
        'straight to the jobs leased next, so a binding limit stays at its limit. As POST /jobs/next without wait: ' +
        'whatever is runnable now, possibly nothing.',
    example: { worker: 'worker-7', types: ['mail.send'], limit: 2 },
});
export const LeaseResponse = z.object({ jobs: z.array(LeasedJobSchema) }).meta({ id: 'LeaseResponse' });
/** What a worker saves: a periodic task's state, or a one-shot job's checkpoint. */
const SavedState = AnyJson("For a job of a periodic task: saved on the task and handed to its next job as taskState. For a one-shot job: kept as the job's checkpoint and handed to its next attempt.", { cursor: 'msg-1200' });
export const HeartbeatBody = body({
    leaseToken: LeaseToken,
    lease: durationString({
        minMs: MIN_LEASE_MS,
        maxMs: MAX_LEASE_MS,
        description: 'Extend the lease to now + this (default: the length given at lease time).',
        example: '30s',
    }).optional(),
    progress: AnyJson('Any JSON, shown on the job as progress.', { done: 40, of: 100 }).optional(),
    state: SavedState.optional(),
}, {}).meta({
    id: 'Heartbeat',
    additionalProperties: false,
    example: { leaseToken: '3f1c2b9e-8d4a-4c6b-9a51-2b7e0c1d5f00', progress: { done: 40, of: 100 } },
});
export const HeartbeatResponse = z
    .object({
    leaseExpiresAt: When.nullable(),
    deadline: When.nullable(),
    cancel: z.boolean().meta({ description: 'Stop now: the deadline passed or the job was cancelled. Report within the grace.' }),
})
    .meta({
    id: 'HeartbeatResponse',
    example: { leaseExpiresAt: '2026-11-20T09:01:00.000Z', deadline: '2026-11-20T09:00:30.015Z', cancel: false },
});
export const FinishedBody = body({
    leaseToken: LeaseToken,
    result: AnyJson('Any JSON, kept on the job.', { sent: true }).optional(),
    state: SavedState.optional(),
}, {}).meta({
    id: 'Finished',
    additionalProperties: false,
    example: { leaseToken: '3f1c2b9e-8d4a-4c6b-9a51-2b7e0c1d5f00', result: { sent: true } },
});
const RetryIn = durationString({
    minMs: 0,
    maxMs: MAX_DURATION_MS,
    description: 'With attempts left, queue the job again after this long instead of the backoff.',
    example: '1m',
});
const Final = z.boolean().meta({ description: 'true: failed for good, whatever attempts remain (no retry).' });
export const ReleaseBody = body({
    leaseToken: LeaseToken,
    retryIn: durationString({
        minMs: 0,
        maxMs: MAX_DURATION_MS,
        description: 'Queue the job again after this long (a snooze) instead of at once; the attempt is not counted either way.',
        example: '10m',
    }).optional(),
    state: SavedState.optional(),
}, {}).meta({
    id: 'Release',
    additionalProperties: false,
    example: { leaseToken: '3f1c2b9e-8d4a-4c6b-9a51-2b7e0c1d5f00', retryIn: '10m' },
});
export const FailedBody = body({
    leaseToken: LeaseToken,
    error: AnyJson('Any JSON describing the failure (required).', { message: 'SMTP 451 try again later' }).optional(),
    retryIn: RetryIn.optional(),
    final: Final.optional(),
    state: SavedState.optional(),
}, {})
    .check(z.superRefine((b, ctx) => {
    if (typeof b === 'object' && b !== null && b.error === undefined) {
        ctx.addIssue({ code: 'custom', path: ['error'], message: '"error" is required: say what went wrong' });
    }
}, { when: () => true }))
    .meta({
    id: 'Failed',
    additionalProperties: false,
    required: ['leaseToken', 'error'],
    example: { leaseToken: '3f1c2b9e-8d4a-4c6b-9a51-2b7e0c1d5f00', error: { message: 'SMTP 451 try again later' }, retryIn: '1m' },
});
const ReportItem = body({
    id: z.string().min(1).max(MAX_NAME).meta({ example: '1042' }),
    leaseToken: LeaseToken,
    outcome: z.enum(['finished', 'failed']),
    result: AnyJson('For outcome finished.', { sent: true }).optional(),
    error: AnyJson('For outcome failed.', { message: 'SMTP 451 try again later' }).optional(),
    retryIn: RetryIn.optional(),
    final: Final.optional(),
    state: SavedState.optional(),
}, {})
    .meta({ additionalProperties: false })
    .superRefine((r, ctx) => {
    if (r.outcome === 'finished') {
        if (r.error !== undefined)
            ctx.addIssue({ code: 'custom', path: ['error'], message: 'error belongs to outcome "failed"' });
        if (r.retryIn !== undefined)
            ctx.addIssue({ code: 'custom', path: ['retryIn'], message: 'retryIn belongs to outcome "failed"' });
        if (r.final !== undefined)
            ctx.addIssue({ code: 'custom', path: ['final'], message: 'final belongs to outcome "failed"' });
    }
    else {
        // as POST /jobs/{id}/failed requires it
        if (r.error === undefined)
            ctx.addIssue({ code: 'custom', path: ['error'], message: '"error" is required for outcome "failed"' });
        if (r.result !== undefined)
            ctx.addIssue({ code: 'custom', path: ['result'], message: 'result belongs to outcome "finished"' });
    }
});
export const ReportsBody = z
    .strictObject({
    reports: z.array(ReportItem).min(1, 'send at least one report').max(MAX_BATCH, `at most ${MAX_BATCH} reports per request`),
    returnJobs: z.boolean().optional().meta({
        description: 'true: each 200 result carries the job after the report (`job`). Default false: id and status only, which is cheaper.',
    }),
    next: NextLease.optional(),
})
    .meta({
    id: 'Reports',
    additionalProperties: false,
    description: 'Many finished/failed reports in one request, applied in one statement.',
    example: {
        reports: [
            { id: '1042', leaseToken: '3f1c2b9e-8d4a-4c6b-9a51-2b7e0c1d5f00', outcome: 'finished', result: { sent: true } },
            { id: '1043', leaseToken: '0b6f6a64-6f1e-4a57-8a8e-3c1b2b8f9d11', outcome: 'failed', error: { message: 'timeout' } },
        ],
    },
});
export const ReportsResponse = z
    .object({
    results: z.array(z.object({
        id: z.string(),
        status: z.number().int().meta({ description: 'What the single report would have answered: 200, 404 or 409.' }),
        job: JobSchema.optional().meta({ description: 'The job after the report: only on a 200 result, and only with returnJobs: true.' }),
        detail: z.string().optional().meta({ description: 'Why, when status is not 200.' }),
    })),
    jobs: z
        .array(LeasedJobSchema)
        .optional()
        .meta({ description: 'With `next`: the jobs leased after the reports, in the same transaction (possibly none).' }),
})
    .meta({
    id: 'ReportsResponse',
    example: {
        results: [
            { id: '1042', status: 200 },
            { id: '1043', status: 409, detail: 'the lease was lost' },
        ],
    },
});
/** `Prefer` on a single report (RFC 7240). */
export const ReportPreferHeaders = z.object({
    prefer: z.string().optional().meta({
        description: '`return=minimal`: answer 204 without the job once the report is applied; `Preference-Applied` says so.',
        example: 'return=minimal',
    }),
});
//# sourceMappingURL=workers.js.map