/** A job's history (GET /jobs/{id}/events) and why it waits (GET /jobs/{id}/explain). */
import { z } from 'zod';
import { TimestampOut } from './common.js';
import { JOB_STATES } from '../../domain/job.js';
export const JobEventSchema = z
    .object({
    at: TimestampOut,
    kind: z.string().meta({
        description: 'created, leased, finished, requeued (a failure with attempts left), failed, lease-expired, timed-out, given-back, dropped, cancelled, retried, patched',
    }),
    attempt: z.number().int().nullable(),
    worker: z.string().nullable(),
    actor: z.string().nullable().meta({ description: 'The role that took a manual action (admin, producer, …), or policy:replace.' }),
    detail: z.unknown(),
})
    .meta({ id: 'JobEvent' });
export const ExplainResponse = z
    .object({
    id: z.string(),
    state: z.enum(JOB_STATES),
    runnable: z.boolean().meta({ description: 'true: nothing holds it back; it waits for a worker' }),
    reasons: z.array(z.object({
        code: z.enum([
            'scheduled',
            'retry-backoff',
            'type-paused',
            'group-paused',
            'type-at-concurrency',
            'group-at-concurrency',
            'type-rate-limited',
            'group-rate-limited',
            'waiting-for-worker',
            'running',
            'final',
            'waiting-for-dependencies',
        ]),
        detail: z.string(),
    })),
})
    .meta({ id: 'JobExplanation' });
export const JobEventsResponse = z.object({ items: z.array(JobEventSchema) }).meta({ id: 'JobEvents' });
export function jobEventDto(e) {
    return { at: e.at.toISOString(), kind: e.kind, attempt: e.attempt, worker: e.worker, actor: e.actor, detail: e.detail ?? null };
}
//# sourceMappingURL=job-history.js.map