import { z } from 'zod';
import { ProblemSchema, standardErrors } from '../schemas/common.js';
import { JobIdParams, JobSchema, jobDto, prefersMinimal } from '../schemas/jobs.js';
import { FailedBody, FinishedBody, HeartbeatBody, heartbeatDto, HeartbeatResponse, LeaseBody, leasedJobDto, LeaseResponse, ReleaseBody, ReportsBody, ReportPreferHeaders, ReportsResponse, } from '../schemas/workers.js';
const notFound = { 404: ProblemSchema };
const conflict = { 409: ProblemSchema };
const MINIMAL_REPORT = z.null().meta({ description: 'Reported (Prefer: return=minimal): no job in the answer' });
/** A batched report's result carries the status its single report would have had. */
const REPORT_STATUS = { applied: 200, repeat: 200, 'not-found': 404, 'lease-lost': 409 };
/** The worker protocol: lease, heartbeat, release, report. Thin: parse, call one service method, answer. */
export function workerRoutes(deps) {
    const workers = deps.services.workers;
    return async (app) => {
        app.post('/jobs/next', {
            config: { access: 'jobs:work' },
            schema: {
                tags: ['workers'],
                operationId: 'leaseJobs',
                summary: 'Lease runnable jobs (long-poll with wait)',
                description: 'Order: priority (higher first), runAt, creation. 204 when nothing is runnable within `wait`. ' +
                    "Each job carries its leaseToken; for a job of a periodic task, taskState is the state its task's last run saved.",
                body: LeaseBody,
                response: { 200: LeaseResponse, 204: z.null().meta({ description: 'Nothing runnable within wait' }), ...standardErrors },
            },
        }, async (request, reply) => {
            const body = request.body;
            const abort = new AbortController();
            const onClose = () => {
                if (!reply.raw.writableFinished)
                    abort.abort();
            };
            reply.raw.once('close', onClose);
            try {
                const leased = await workers.next({ worker: body.worker, types: body.types, groups: body.groups, waitMs: body.wait, leaseMs: body.lease, limit: body.limit }, abort.signal);
                if (leased.length === 0)
                    return reply.status(204).send(null);
                return reply.status(200).send({ jobs: leased.map(leasedJobDto) });
            }
            finally {
                reply.raw.removeListener('close', onClose);
            }
        });
        app.post('/jobs/:id/heartbeat', {
            config: { access: 'jobs:work' },
            schema: {
                tags: ['workers'],
                operationId: 'heartbeatJob',
                summary: 'Extend the lease, report progress, save task state',
                params: JobIdParams,
                body: HeartbeatBody,
                response: { 200: HeartbeatResponse, ...standardErrors, ...notFound, ...conflict },
            },
        }, async (request) => {
            const b = request.body;
            return heartbeatDto(await workers.heartbeat(request.params.id, { leaseToken: b.leaseToken, leaseMs: b.lease, progress: b.progress, state: b.state }));
        });
        app.post('/jobs/:id/release', {
            config: { access: 'jobs:work' },
            schema: {
                tags: ['workers'],
                operationId: 'releaseJob',
                summary: 'Give a lease back',
                description: 'The job is queued again at once, or after retryIn (a snooze), and the attempt is not counted: for a worker that stops ' +
                    'before it could do the work, or cannot do it now. state is saved as a heartbeat saves it. ' +
                    'A token that is not the current lease (repeated, stale, or the job was reported) is 409.',
                params: JobIdParams,
                body: ReleaseBody,
                response: { 200: JobSchema, ...standardErrors, ...notFound, ...conflict },
            },
        }, async (request) => {
            const b = request.body;
            return jobDto(await workers.release(request.params.id, { leaseToken: b.leaseToken, retryInMs: b.retryIn, state: b.state }));
        });
        app.post('/jobs/:id/finished', {
            config: { access: 'jobs:work' },
            schema: {
                tags: ['workers'],
                operationId: 'reportJobFinished',
                summary: 'Report a job finished',
                description: 'Repeating it with the same token is harmless (200); a stale or wrong token is 409. ' +
                    'With `Prefer: return=minimal` the answer is 204 without the job (a worker that reports one job per request has no use for it).',
                params: JobIdParams,
                headers: ReportPreferHeaders,
                body: FinishedBody,
                response: { 200: JobSchema, 204: MINIMAL_REPORT, ...standardErrors, ...notFound, ...conflict },
            },
        }, async (request, reply) => {
            const b = request.body;
            const req = { id: request.params.id, leaseToken: b.leaseToken, outcome: 'finished', result: b.result, state: b.state };
            if (prefersMinimal(request.headers.prefer)) {
                await workers.report(req, { withJob: false });
                return reply.status(204).header('preference-applied', 'return=minimal').send(null);
            }
            return reply.status(200).send(jobDto(await workers.report(req)));
        });
        app.post('/jobs/:id/failed', {
            config: { access: 'jobs:work' },
            schema: {
                tags: ['workers'],
                operationId: 'reportJobFailed',
                summary: 'Report a job failed',
                description: 'With attempts left the job is queued again after a backoff (or retryIn); else, or with final: true, it is failed. ' +
                    'With `Prefer: return=minimal` the answer is 204 without the job.',
                params: JobIdParams,
                headers: ReportPreferHeaders,
                body: FailedBody,
                response: { 200: JobSchema, 204: MINIMAL_REPORT, ...standardErrors, ...notFound, ...conflict },
            },
        }, async (request, reply) => {
            const b = request.body;
            const req = {
                id: request.params.id,
                leaseToken: b.leaseToken,
                outcome: 'failed',
                error: b.error,
                retryInMs: b.retryIn,
                final: b.final,
                state: b.state,
            };
            if (prefersMinimal(request.headers.prefer)) {
                await workers.report(req, { withJob: false });
                return reply.status(204).header('preference-applied', 'return=minimal').send(null);
            }
            return reply.status(200).send(jobDto(await workers.report(req)));
        });
        app.post('/jobs/reports', {
            config: { access: 'jobs:work' },
            schema: {
                tags: ['workers'],
                operationId: 'reportJobs',
                summary: 'Report many jobs finished or failed in one request',
                description: 'Each result carries the status its single report would have had (200, 404 or 409). ' +
                    'A 200 result carries the job after the report only when the request asks for it with `returnJobs: true`. ' +
                    "With `next`, the worker's next jobs are leased in the same transaction and come back as `jobs`: the concurrency " +
                    'slots the reported jobs held pass straight to them.',
                body: ReportsBody,
                response: { 200: ReportsResponse, ...standardErrors },
            },
        }, async (request) => {
            const b = request.body;
            const reports = b.reports.map((r) => ({
                id: r.id,
                leaseToken: r.leaseToken,
                outcome: r.outcome,
                result: r.result,
                error: r.error,
                retryInMs: r.retryIn,
                final: r.final,
                state: r.state,
            }));
            const opts = { withJobs: b.returnJobs === true };
            const n = b.next;
            const { answers, leased } = n
                ? await workers.reportManyAndLease(reports, { worker: n.worker, types: n.types, groups: n.groups, leaseMs: n.lease, limit: n.limit }, opts)
                : { answers: await workers.reportMany(reports, opts), leased: null };
            const results = answers.map((a) => {
                const status = REPORT_STATUS[a.verdict];
                return a.job ? { id: a.id, status, job: jobDto(a.job) } : { id: a.id, status, detail: a.detail };
            });
            return leased ? { results, jobs: leased.map(leasedJobDto) } : { results };
        });
    };
}
//# sourceMappingURL=workers.js.map