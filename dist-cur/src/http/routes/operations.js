import { z } from 'zod';
import { name, ProblemSchema, standardErrors, TimestampOut } from '../schemas/common.js';
const ThroughputQuery = z.strictObject({
    minutes: z.coerce
        .number({ error: 'minutes must be a whole number from 1 to 1440' })
        .int('minutes must be a whole number from 1 to 1440')
        .min(1, 'minutes must be at least 1')
        .max(1440, 'minutes must be at most 1440')
        .default(15),
    type: name('type', 'mail.send').optional(),
});
const ThroughputResponse = z
    .object({
    buckets: z.array(z.object({
        at: TimestampOut.meta({ description: "The minute's start." }),
        finished: z.number().int(),
        failed: z.number().int(),
    })),
})
    .meta({ id: 'Throughput', description: 'One bucket per minute, oldest first; the current minute is the last.' });
/** What operators read: Prometheus metrics and throughput. */
export function operationsRoutes(deps) {
    return async (app) => {
        app.get('/metrics', {
            config: { access: 'metrics:read' },
            schema: {
                tags: ['operations'],
                operationId: 'getMetrics',
                summary: 'Prometheus metrics (text exposition format)',
                description: 'jobclock_jobs{type,state}, jobclock_oldest_queued_seconds{type}, jobclock_jobs_leased_total{type}, ' +
                    'jobclock_jobs_completed_total{type,outcome}, jobclock_lease_wait_seconds, jobclock_periodic_lateness_seconds, ' +
                    'jobclock_http_request_duration_seconds{route,method,status} and the process metrics (jobclock_process_*, jobclock_nodejs_*). ' +
                    'The open-job gauges come from one query over open jobs, reused for 5 s.',
                response: {
                    200: { description: 'The metrics in the Prometheus text exposition format', content: { 'text/plain': { schema: z.string() } } },
                    401: ProblemSchema,
                    403: ProblemSchema,
                    503: ProblemSchema,
                },
            },
        }, async (_request, reply) => {
            const { contentType, body } = await deps.services.metrics.text();
            return reply.type(contentType).send(body);
        });
        app.get('/stats/throughput', {
            config: { access: 'jobs:read' },
            schema: {
                tags: ['operations'],
                operationId: 'getThroughput',
                summary: 'Jobs finished and failed per minute',
                querystring: ThroughputQuery,
                response: { 200: ThroughputResponse, ...standardErrors },
            },
        }, async (request) => {
            const buckets = await deps.services.stats.throughput(request.query.minutes, request.query.type);
            return { buckets: buckets.map((b) => ({ at: b.at.toISOString(), finished: b.finished, failed: b.failed })) };
        });
    };
}
//# sourceMappingURL=operations.js.map