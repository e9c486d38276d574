import { z } from 'zod';
import { ProblemSchema, standardErrors, Timestamp, TimestampOut } from '../schemas/common.js';
import { DeletedSchema, NoQuerySchema, PeriodicTaskSchema, TaskCreateBodySchema, TaskDeleteByOwnerQuerySchema, TaskIdParamsSchema, TaskListQuerySchema, TaskPageSchema, TaskPatchBodySchema, taskToJson, RunPageSchema, RunsQuerySchema, runToJson, } from '../schemas/periodic-tasks.js';
import { JobSchema, jobDto } from '../schemas/jobs.js';
import { MAX_BACKFILL } from '../../domain/run-plan.js';
const BackfillBody = z
    .strictObject({
    from: Timestamp.meta({ description: 'The first slot considered (inclusive)' }),
    to: Timestamp.meta({ description: 'The end of the range (exclusive); not in the future' }),
})
    .meta({ id: 'Backfill', example: { from: '2026-11-01T00:00:00.000Z', to: '2026-11-02T00:00:00.000Z' } });
const BackfillResponse = z
    .object({
    jobs: z.array(JobSchema).meta({ description: 'The jobs submitted, in slot order' }),
    existing: z.array(TimestampOut).meta({ description: 'Slots of the range that had a job already' }),
    skipped: z
        .array(z.object({ scheduledAt: TimestampOut, reason: z.string().meta({ description: 'forbid-open-job or one-open-job-at-a-time' }) }))
        .meta({ description: 'Free slots the concurrency policy did not submit' }),
})
    .meta({ id: 'BackfillResult' });
const tags = ['periodic-tasks'];
/** The periodic_task API (API.md "Periodic tasks"). Reading needs tasks:read, the rest tasks:write. */
export function periodicTaskRoutes(deps) {
    const tasks = deps.services.tasks;
    return async (app) => {
        app.post('/periodic-tasks', {
            config: { access: 'tasks:write' },
            schema: {
                tags,
                operationId: 'createPeriodicTask',
                summary: 'Create a periodic task',
                description: 'A bad schedule is a 400 naming the offending part; an id that exists is a 409.',
                querystring: NoQuerySchema,
                body: TaskCreateBodySchema,
                response: { 201: PeriodicTaskSchema, ...standardErrors, 409: ProblemSchema },
            },
        }, async (request, reply) => {
            const task = await tasks.create(request.body);
            return reply.status(201).send(taskToJson(task));
        });
        app.get('/periodic-tasks', {
            config: { access: 'tasks:read' },
            schema: {
                tags,
                operationId: 'listPeriodicTasks',
                summary: 'List periodic tasks',
                description: 'In id order, filtered by owner, task, enabled and health; page with limit and cursor. With `runs=n` each task also carries ' +
                    'the newest n entries of its run ledger (`recentRuns`), read for the whole page at once.',
                querystring: TaskListQuerySchema,
                response: { 200: TaskPageSchema, ...standardErrors },
            },
        }, async (request) => {
            const page = await tasks.list(request.query);
            const n = request.query.runs;
            const recent = n === undefined ? null : await deps.services.runs.recent(page.items, n);
            return {
                items: page.items.map((t) => recent === null ? taskToJson(t) : { ...taskToJson(t), recentRuns: (recent.get(t.id) ?? []).map(runToJson) }),
                nextCursor: page.nextCursor,
            };
        });
        app.delete('/periodic-tasks', {
            config: { access: 'tasks:write' },
            schema: {
                tags,
                operationId: 'deletePeriodicTasksOfOwner',
                summary: 'Delete every periodic task of an owner',
                description: 'What a creator does when the thing it owns is deleted. `owner` is required. Jobs already submitted stay.',
                querystring: TaskDeleteByOwnerQuerySchema,
                response: { 200: DeletedSchema, ...standardErrors },
            },
        }, async (request) => ({ deleted: await tasks.deleteByOwner(request.query.owner) }));
        app.get('/periodic-tasks/:id', {
            config: { access: 'tasks:read' },
            schema: {
                tags,
                operationId: 'getPeriodicTask',
                summary: 'Get a periodic task',
                params: TaskIdParamsSchema,
                querystring: NoQuerySchema,
                response: { 200: PeriodicTaskSchema, ...standardErrors, 404: ProblemSchema },
            },
        }, async (request) => taskToJson(await tasks.get(request.params.id)));
        app.get('/periodic-tasks/:id/runs', {
            config: { access: 'tasks:read' },
            schema: {
                tags,
                operationId: 'listPeriodicTaskRuns',
                summary: 'The run ledger: every slot of the task and what became of it',
                description: 'Every slot of the schedule since the task was created (or since firstRunAt) up to now appears exactly once, newest first, ' +
                    'as far back as the retention keeps jobs: pending, finished, failed, dropped, cancelled (its job), skipped (detail.blockedBy) or missed. ' +
                    'A job submitted by trigger appears at the moment it was submitted, with detail.trigger. Page with limit and cursor.',
                params: TaskIdParamsSchema,
                querystring: RunsQuerySchema,
                response: { 200: RunPageSchema, ...standardErrors, 404: ProblemSchema },
            },
        }, async (request) => {
            const page = await deps.services.runs.runs(request.params.id, request.query);
            return { items: page.items.map(runToJson), nextCursor: page.nextCursor };
        });
        app.patch('/periodic-tasks/:id', {
            config: { access: 'tasks:write' },
            schema: {
                tags,
                operationId: 'updatePeriodicTask',
                summary: 'Change a periodic task',
                description: 'Any writable field. A change of schedule, timezone or firstRunAt recomputes nextRun from now; so does ' +
                    'enabling a disabled task. Disabling clears nextRun.',
                params: TaskIdParamsSchema,
                querystring: NoQuerySchema,
                body: TaskPatchBodySchema,
                response: { 200: PeriodicTaskSchema, ...standardErrors, 404: ProblemSchema },
            },
        }, async (request) => taskToJson(await tasks.patch(request.params.id, request.body ?? {})));
        app.delete('/periodic-tasks/:id', {
            config: { access: 'tasks:write' },
            schema: {
                tags,
                operationId: 'deletePeriodicTask',
                summary: 'Delete a periodic task',
                description: 'Jobs already submitted stay (their periodicTaskId becomes null).',
                params: TaskIdParamsSchema,
                querystring: NoQuerySchema,
                response: { 204: z.null().meta({ description: 'Deleted' }), ...standardErrors, 404: ProblemSchema },
            },
        }, async (request, reply) => {
            await tasks.delete(request.params.id);
            return reply.status(204).send(null);
        });
        app.post('/periodic-tasks/:id/trigger', {
            config: { access: 'tasks:write' },
            schema: {
                tags,
                operationId: 'triggerPeriodicTask',
                summary: 'Submit a job of the task now',
                description: 'The concurrency policy applies: 409 when forbid finds a queued or running job; replace cancels it. ' +
                    'nextRun is not changed; a disabled task may be triggered too.',
                params: TaskIdParamsSchema,
                querystring: NoQuerySchema,
                response: { 201: JobSchema, ...standardErrors, 404: ProblemSchema, 409: ProblemSchema },
            },
        }, async (request, reply) => {
            const job = await tasks.trigger(request.params.id);
            return reply.status(201).send(jobDto(job));
        });
        app.post('/periodic-tasks/:id/backfill', {
            config: { access: 'tasks:write' },
            schema: {
                tags,
                operationId: 'backfillPeriodicTask',
                summary: 'Submit a job for every slot of the schedule in [from, to)',
                description: `At most ${MAX_BACKFILL} slots per call, each with its scheduledAt; a slot that already has a job gets no second one. ` +
                    'The concurrency policy applies per slot as the scheduler applies it: allow submits every free slot; forbid the oldest, ' +
                    'and none while a job of the task is open; replace the newest, cancelling the open job. Backfilled runs have no drop check.',
                params: TaskIdParamsSchema,
                querystring: NoQuerySchema,
                body: BackfillBody,
                response: { 201: BackfillResponse, ...standardErrors, 404: ProblemSchema },
            },
        }, async (request, reply) => {
            const r = await tasks.backfill(request.params.id, request.body.from, request.body.to);
            return reply.status(201).send({
                jobs: r.jobs.map(jobDto),
                existing: r.existing.map((d) => d.toISOString()),
                skipped: r.skipped.map((x) => ({ scheduledAt: x.scheduledAt.toISOString(), reason: x.reason })),
            });
        });
    };
}
//# sourceMappingURL=periodic-tasks.js.map