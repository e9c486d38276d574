import { z } from 'zod';
import { ProblemSchema, standardErrors } from '../schemas/common.js';
import { BulkActionBody, BulkActionResponse, CreateJobBatchBody, CreateJobBody, JobBatchMinimalSchema, JobBatchSchema, jobDto, JobIdParams, JobListQuery, JobListSchema, JobSchema, MAX_BULK, PatchJobBody, PreferHeaders, prefersMinimal, TRACEPARENT_PATTERN, } from '../schemas/jobs.js';
import { ExplainResponse, jobEventDto, JobEventsResponse } from '../schemas/job-history.js';
import { GetJobQuery } from '../schemas/job-wait.js';
import { GRAPH_LIMIT, jobGraphDto, JobGraphResponse } from '../schemas/dependencies.js';
const notFound = { 404: ProblemSchema };
const conflict = { 409: ProblemSchema };
/**
 * A job keeps the trace it was created in: its own traceparent field, else the request's W3C
 * `traceparent` header (an invalid header is ignored, as Trace Context asks of receivers).
 */
function withTraceparent(job, header) {
    if (job.traceparent !== undefined || typeof header !== 'string')
        return job;
    const value = header.trim().toLowerCase();
    return TRACEPARENT_PATTERN.test(value) && !value.startsWith('ff') ? { ...job, traceparent: value } : job;
}
/** Jobs for producers, readers and managers (the worker protocol is workers.ts). Thin: parse, call one service method, answer. */
export function jobRoutes(deps) {
    const jobs = deps.services.jobs;
    return async (app) => {
        app.post('/jobs', {
            config: { access: 'jobs:create' },
            schema: {
                tags: ['jobs'],
                operationId: 'createJob',
                summary: 'Create a job',
                description: 'With the uniqueKey of a queued or running job, nothing is created and that job is returned with 200.',
                body: CreateJobBody,
                response: { 201: JobSchema, 200: JobSchema, ...standardErrors },
            },
        }, async (request, reply) => {
            const { job, created } = await jobs.create(withTraceparent(request.body, request.headers.traceparent));
            return reply.status(created ? 201 : 200).send(jobDto(job));
        });
        app.post('/jobs/batch', {
            config: { access: 'jobs:create' },
            schema: {
                tags: ['jobs'],
                operationId: 'createJobBatch',
                summary: 'Create up to 1000 jobs at once, all or nothing',
                headers: PreferHeaders,
                body: CreateJobBatchBody,
                response: { 201: z.union([JobBatchSchema, JobBatchMinimalSchema]), ...standardErrors },
            },
        }, async (request, reply) => {
            const trace = request.headers.traceparent;
            const created = await jobs.createMany(request.body.jobs.map((j) => withTraceparent(j, trace)));
            if (prefersMinimal(request.headers.prefer)) {
                return reply
                    .status(201)
                    .header('preference-applied', 'return=minimal')
                    .send({ jobs: created.map((j) => ({ id: j.id })) });
            }
            return reply.status(201).send({ jobs: created.map(jobDto) });
        });
        app.get('/jobs', {
            config: { access: 'jobs:read' },
            schema: {
                tags: ['jobs'],
                operationId: 'listJobs',
                summary: 'List jobs, newest first',
                querystring: JobListQuery,
                response: { 200: JobListSchema, ...standardErrors },
            },
        }, async (request) => {
            const page = await jobs.list(request.query);
            return { items: page.items.map(jobDto), nextCursor: page.nextCursor };
        });
        app.get('/jobs/:id', {
            config: { access: 'jobs:read' },
            schema: {
                tags: ['jobs'],
                operationId: 'getJob',
                summary: 'Get a job (with wait: as soon as it ends)',
                description: 'With `wait` (at most 60s), answers as soon as the job is finished, failed, dropped or cancelled, or with the job as it is ' +
                    'when the wait runs out (its state says which). 503 when too many requests already wait on this instance.',
                params: JobIdParams,
                querystring: GetJobQuery,
                response: { 200: JobSchema, ...standardErrors, ...notFound },
            },
        }, async (request) => jobDto(await jobs.get(request.params.id, request.query.wait ?? 0)));
        app.patch('/jobs/:id', {
            config: { access: 'jobs:manage' },
            schema: {
                tags: ['jobs'],
                operationId: 'updateJob',
                summary: 'Change the priority or runAt of a queued job',
                params: JobIdParams,
                body: PatchJobBody,
                response: { 200: JobSchema, ...standardErrors, ...notFound, ...conflict },
            },
        }, async (request) => jobDto(await jobs.patch(request.params.id, request.body, request.role)));
        app.post('/jobs/:id/cancel', {
            config: { access: 'jobs:manage' },
            schema: {
                tags: ['jobs'],
                operationId: 'cancelJob',
                summary: 'Cancel a queued or running job',
                description: "A running job's worker learns it from its next heartbeat (cancel: true).",
                params: JobIdParams,
                response: { 200: JobSchema, ...standardErrors, ...notFound, ...conflict },
            },
        }, async (request) => jobDto(await jobs.cancel(request.params.id, request.role)));
        app.post('/jobs/:id/retry', {
            config: { access: 'jobs:manage' },
            schema: {
                tags: ['jobs'],
                operationId: 'retryJob',
                summary: 'Queue a failed, dropped or cancelled job again',
                description: 'Runnable at once, with attempts reset to 0 (maxAttempts more tries).',
                params: JobIdParams,
                response: { 200: JobSchema, ...standardErrors, ...notFound, ...conflict },
            },
        }, async (request) => jobDto(await jobs.retry(request.params.id, request.role)));
        app.get('/jobs/:id/explain', {
            config: { access: 'jobs:read' },
            schema: {
                tags: ['jobs'],
                operationId: 'explainJob',
                summary: 'Why a job is not running',
                description: 'Codes: scheduled, retry-backoff, type-paused, group-paused, type-at-concurrency, group-at-concurrency, ' +
                    'type-rate-limited, group-rate-limited, waiting-for-worker (runnable; detail says how many runnable jobs come before it), running, final, ' +
                    'waiting-for-dependencies (detail names the jobs it runs after that have not ended).',
                params: JobIdParams,
                response: { 200: ExplainResponse, ...standardErrors, ...notFound },
            },
        }, async (request) => {
            const e = await jobs.explain(request.params.id);
            return { id: e.job.id, state: e.job.state, runnable: e.runnable, reasons: e.reasons };
        });
        app.get('/jobs/:id/graph', {
            config: { access: 'jobs:read' },
            schema: {
                tags: ['jobs'],
                operationId: 'getJobGraph',
                summary: 'The jobs a job runs after and the jobs that run after it',
                description: `Each with its type, state and finishedAt; at most ${GRAPH_LIMIT} of each, \`more\` says how many were left out.`,
                params: JobIdParams,
                response: { 200: JobGraphResponse, ...standardErrors, ...notFound },
            },
        }, async (request) => jobGraphDto(await jobs.graph(request.params.id, GRAPH_LIMIT)));
        app.get('/jobs/:id/events', {
            config: { access: 'jobs:read' },
            schema: {
                tags: ['jobs'],
                operationId: 'listJobEvents',
                summary: "A job's history, oldest first",
                description: 'Created, each lease (worker, attempt), each outcome (finished, failed with its error, requeued after a failure ' +
                    'with the backoff, lease expired, timed out, dropped with the reason), and every action taken through the API ' +
                    '(patch, cancel, retry) with the role that took it.',
                params: JobIdParams,
                response: { 200: JobEventsResponse, ...standardErrors, ...notFound },
            },
        }, async (request) => ({ items: (await jobs.events(request.params.id)).map(jobEventDto) }));
        app.post('/jobs/cancel', {
            config: { access: 'jobs:manage' },
            schema: {
                tags: ['jobs'],
                operationId: 'cancelJobs',
                summary: 'Cancel the queued and running jobs a filter selects',
                description: `At most limit (default and maximum ${MAX_BULK}), in bounded batches.`,
                body: BulkActionBody,
                response: { 200: BulkActionResponse, ...standardErrors },
            },
        }, async (request) => ({
            affected: await jobs.cancelMatching(request.body.filter, request.body.limit ?? MAX_BULK, request.role),
        }));
        app.post('/jobs/retry', {
            config: { access: 'jobs:manage' },
            schema: {
                tags: ['jobs'],
                operationId: 'retryJobs',
                summary: 'Queue again the failed, dropped and cancelled jobs a filter selects',
                description: `At most limit (default and maximum ${MAX_BULK}), in bounded batches. A job whose uniqueKey another open job holds is left as it is.`,
                body: BulkActionBody,
                response: { 200: BulkActionResponse, ...standardErrors },
            },
        }, async (request) => ({
            affected: await jobs.retryMatching(request.body.filter, request.body.limit ?? MAX_BULK, request.role),
        }));
    };
}
//# sourceMappingURL=jobs.js.map