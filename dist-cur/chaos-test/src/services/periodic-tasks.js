import { randomUUID } from 'node:crypto';
import { withTransaction } from '../db/executor.js';
import { ConflictError, DomainError, InvalidInputError, NotFoundError } from '../domain/errors.js';
import { MAX_BACKFILL, planBackfill, slotsBetween } from '../domain/run-plan.js';
import { DEFAULT_CATCH_UP_LIMIT, effectiveTimebox, firstRunBefore, isTaskId, parseTiming, ScheduleCache, viewOf, } from '../domain/periodic-task.js';
import { taskDelete, taskDeleteByOwner, taskFromRow, taskGet, taskInsert, taskList, taskPatch, } from '../repositories/periodic-tasks.js';
import { jobCancelOpenOfTasks, jobOpenOfTask, jobSlotsOfTask, jobSubmitForTask, jobSubmitSlots } from '../repositories/jobs.js';
import { slotRecordTrigger } from '../repositories/task-runs.js';
import { overdueAtOf } from '../domain/task-health.js';
import { parseDuration } from '../domain/duration.js';
import { decodeCursor, encodeCursor } from './cursor.js';
const sameTime = (a, b) => (a === null ? b === null : b !== null && a.getTime() === b.getTime());
/** Periodic tasks: create, read, change, delete, trigger. */
export class PeriodicTaskService {
    ctx;
    schedules = new ScheduleCache(1_000);
    constructor(ctx) {
        this.ctx = ctx;
    }
    view(t) {
        return viewOf(t, this.ctx.clock.now(), this.schedules);
    }
    async create(input) {
        const now = this.ctx.clock.now();
        const id = input.id ?? randomUUID();
        const firstRunAt = input.firstRunAt ? new Date(input.firstRunAt) : null;
        const timezone = input.timezone ?? 'UTC';
        const timing = parseTiming({ schedule: input.schedule, timezone, firstRunAt, tolerance: input.tolerance ?? null, timebox: input.timebox ?? null }, now, now);
        const enabled = input.enabled ?? true;
        const extra = parseLeaveAlone(input);
        const endAt = extra.endAt ?? null;
        const alertAfter = extra.alertAfter ?? null;
        const nextRun = enabled ? firstRunBefore({ schedule: timing.schedule, createdAt: now, firstRunAt }, now, endAt) : null;
        const values = {
            task: input.task,
            group: input.group ?? 'default',
            args: input.args ?? null,
            subject: input.subject ?? null,
            submitter: input.submitter ?? null,
            priority: input.priority ?? 0,
            owner: input.owner ?? null,
            enabled,
            schedule: input.schedule,
            timezone,
            firstRunAt,
            tolerance: timing.tolerance,
            timebox: timing.timebox,
            concurrencyPolicy: input.concurrencyPolicy ?? 'forbid',
            misfirePolicy: input.misfirePolicy ?? 'coalesce',
            catchUpLimit: input.catchUpLimit ?? DEFAULT_CATCH_UP_LIMIT,
            maxAttempts: input.maxAttempts ?? 1,
            catchUpWindow: extra.catchUpWindow ?? null,
            endAt,
            alertAfter,
            overdueAt: overdueAtOf({ schedule: timing.schedule, createdAt: now, firstRunAt, alertAfter, endAt, lastSuccessAt: null }),
            nextRun,
        };
        const row = await taskInsert(this.ctx.db, id, values, now);
        if (!row)
            throw new ConflictError(`A periodic task with id "${id}" already exists.`);
        this.ctx.logger.info({ taskId: id, nextRun: values.nextRun }, 'periodic task created');
        return this.view(taskFromRow(row));
    }
    async get(id) {
        const row = await taskGet(this.ctx.db, id);
        if (!row)
            throw notFound(id);
        return this.view(taskFromRow(row));
    }
    async list(q) {
        const after = q.cursor === undefined ? undefined : decodeCursor('t', q.cursor, isTaskId);
        const rows = await taskList(this.ctx.db, {
            owner: q.owner,
            task: q.task,
            enabled: q.enabled,
            health: q.health === undefined ? undefined : { status: q.health, now: this.ctx.clock.now() },
            after,
            limit: q.limit,
        });
        const page = rows.slice(0, q.limit);
        const last = page[page.length - 1];
        return {
            items: page.map((r) => this.view(taskFromRow(r))),
            nextCursor: rows.length > q.limit && last ? encodeCursor('t', last.id) : null,
        };
    }
    /**
     * Changes any writable field. A change of schedule, time zone or firstRunAt recomputes nextRun
     * from now, and so does enabling a disabled task; disabling clears it.
     */
    async patch(id, input) {
        const now = this.ctx.clock.now();
        const row = await withTransaction(this.ctx.db, async (trx) => {
            const found = await taskGet(trx, id, { forUpdate: true });
            if (!found)
                throw notFound(id);
            const cur = taskFromRow(found);
            const changes = {};
            if (input.task !== undefined)
                changes.task = input.task;
            if (input.group !== undefined)
                changes.group = input.group;
            if (input.args !== undefined)
                changes.args = input.args;
            if (input.subject !== undefined)
                changes.subject = input.subject;
            if (input.submitter !== undefined)
                changes.submitter = input.submitter;
            if (input.priority !== undefined)
                changes.priority = input.priority;
            if (input.owner !== undefined)
                changes.owner = input.owner;
            if (input.concurrencyPolicy !== undefined)
                changes.concurrencyPolicy = input.concurrencyPolicy;
            if (input.misfirePolicy !== undefined)
                changes.misfirePolicy = input.misfirePolicy;
            if (input.catchUpLimit !== undefined)
                changes.catchUpLimit = input.catchUpLimit;
            if (input.enabled !== undefined)
                changes.enabled = input.enabled;
            if (input.maxAttempts !== undefined)
                changes.maxAttempts = input.maxAttempts;
            const extra = parseLeaveAlone(input);
            if (extra.catchUpWindow !== undefined)
                changes.catchUpWindow = extra.catchUpWindow;
            if (extra.alertAfter !== undefined)
                changes.alertAfter = extra.alertAfter;
            if (extra.endAt !== undefined)
                changes.endAt = extra.endAt;
            const endAt = extra.endAt === undefined ? cur.endAt : extra.endAt;
            const alertAfter = extra.alertAfter === undefined ? cur.alertAfter : extra.alertAfter;
            const endChanged = !sameTime(endAt, cur.endAt);
            const schedule = input.schedule ?? cur.schedule;
            const timezone = input.timezone ?? cur.timezone;
            const firstRunAt = input.firstRunAt === undefined ? cur.firstRunAt : input.firstRunAt === null ? null : new Date(input.firstRunAt);
            const timingTouched = input.schedule !== undefined ||
                input.timezone !== undefined ||
                input.firstRunAt !== undefined ||
                input.tolerance !== undefined ||
                input.timebox !== undefined;
            const timingChanged = schedule !== cur.schedule || timezone !== cur.timezone || !sameTime(firstRunAt, cur.firstRunAt);
            const enabled = input.enabled ?? cur.enabled;
            if (timingTouched) {
                const timing = parseTiming({
                    schedule,
                    timezone,
                    firstRunAt,
                    tolerance: input.tolerance === undefined ? cur.tolerance : input.tolerance,
                    timebox: input.timebox === undefined ? cur.timebox : input.timebox,
                }, cur.createdAt, now);
                Object.assign(changes, { schedule, timezone, firstRunAt, tolerance: timing.tolerance, timebox: timing.timebox });
                if (enabled && (timingChanged || !cur.enabled)) {
                    changes.nextRun = firstRunBefore({ schedule: timing.schedule, createdAt: cur.createdAt, firstRunAt }, now, endAt);
                }
            }
            else if (enabled && !cur.enabled) {
                changes.nextRun = firstRunBefore({ schedule: this.schedules.get(schedule, timezone), createdAt: cur.createdAt, firstRunAt }, now, endAt);
            }
            if (enabled && endChanged && changes.nextRun === undefined) {
                // an end moved earlier stops the task at it; one moved later or removed lets it go on from now
                const kept = cur.nextRun !== null && (endAt === null || cur.nextRun.getTime() < endAt.getTime()) ? cur.nextRun : null;
                changes.nextRun =
                    kept ?? firstRunBefore({ schedule: this.schedules.get(schedule, timezone), createdAt: cur.createdAt, firstRunAt }, now, endAt);
            }
            if (!enabled && cur.nextRun !== null)
                changes.nextRun = null;
            if (extra.alertAfter !== undefined || timingChanged || endChanged || (enabled && !cur.enabled)) {
                changes.overdueAt = overdueAtOf({
                    schedule: this.schedules.get(schedule, timezone),
                    createdAt: cur.createdAt,
                    firstRunAt,
                    alertAfter,
                    endAt,
                    lastSuccessAt: cur.lastSuccessAt,
                });
            }
            if (Object.keys(changes).length === 0)
                return found;
            return taskPatch(trx, id, changes, now);
        });
        if (!row)
            throw notFound(id);
        const task = taskFromRow(row);
        this.ctx.logger.info({ taskId: id, fields: Object.keys(input), nextRun: task.nextRun }, 'periodic task changed');
        return this.view(task);
    }
    async delete(id) {
        if (!(await taskDelete(this.ctx.db, id)))
            throw notFound(id);
        this.ctx.logger.info({ taskId: id }, 'periodic task deleted');
    }
    /** Deletes every task of an owner (what a creator does when the thing it owns goes away). */
    async deleteByOwner(owner) {
        const deleted = await taskDeleteByOwner(this.ctx.db, owner);
        this.ctx.logger.info({ owner, deleted }, 'periodic tasks of an owner deleted');
        return deleted;
    }
    /**
     * Submits a job of the task now, whatever its schedule (nextRun is left alone; a disabled task
     * may be triggered too). The policy applies: forbid refuses while an open job exists, replace
     * cancels it first. A triggered job is not a slot, so it has no drop check.
     */
    async trigger(id) {
        const now = this.ctx.clock.now();
        const { job, cancelled } = await withTransaction(this.ctx.db, async (trx) => {
            const found = await taskGet(trx, id, { forUpdate: true });
            if (!found)
                throw notFound(id);
            const task = taskFromRow(found);
            let cancelled = [];
            if (task.concurrencyPolicy === 'forbid') {
                const open = await jobOpenOfTask(trx, id);
                if (open !== null) {
                    throw new ConflictError(`Periodic task "${id}" has a queued or running job (${open}) and its concurrencyPolicy is forbid; wait for it to finish or cancel it.`);
                }
            }
            else if (task.concurrencyPolicy === 'replace') {
                cancelled = (await jobCancelOpenOfTasks(trx, [id], now)).map((c) => c.id);
            }
            const timebox = effectiveTimebox({ schedule: this.schedules.get(task.schedule, task.timezone), timebox: task.timebox }, task.nextRun ?? now);
            const job = await jobSubmitForTask(trx, { taskId: id, runAt: now, scheduledAt: null, timebox, runInterval: null, runTolerance: null }, now);
            if (!job)
                throw notFound(id);
            await slotRecordTrigger(trx, id, job.id, now);
            return { job, cancelled };
        });
        for (const c of cancelled)
            this.ctx.logger.info({ taskId: id, jobId: c, by: job.id }, 'cancelled open job of periodic task (policy replace)');
        this.ctx.metrics?.periodicSlots('cancelled', cancelled.length);
        this.ctx.logger.info({ taskId: id, jobId: job.id }, 'periodic task triggered');
        return job;
    }
    /**
     * Submits a job for every slot of the task's schedule in [from, to) that has none yet (the unique
     * (task, slot) key: never twice, also against the scheduler), at most MAX_BACKFILL slots per call,
     * with the concurrency policy applied per slot as the scheduler applies it (see planBackfill). The
     * task's row is locked meanwhile, so the scheduler passes it over until the backfill commits.
     */
    async backfill(id, from, to) {
        const now = this.ctx.clock.now();
        if (from.getTime() >= to.getTime()) {
            throw new DomainError('invalid_input', 'from must be before to.', [{ path: '/to', message: 'must be after from' }]);
        }
        if (to.getTime() > now.getTime() + 1) {
            throw new DomainError('invalid_input', `A backfill covers the past: to must not be after now (${now.toISOString()}).`, [
                { path: '/to', message: 'must not be in the future' },
            ]);
        }
        const result = await withTransaction(this.ctx.db, async (trx) => {
            const found = await taskGet(trx, id, { forUpdate: true });
            if (!found)
                throw notFound(id);
            const task = taskFromRow(found);
            const timing = {
                schedule: this.schedules.get(task.schedule, task.timezone),
                createdAt: task.createdAt,
                firstRunAt: task.firstRunAt,
                tolerance: task.tolerance,
                timebox: task.timebox,
            };
            const slots = slotsBetween(timing, from, to, MAX_BACKFILL);
            if (slots.length > MAX_BACKFILL) {
                throw new DomainError('invalid_input', `[${from.toISOString()}, ${to.toISOString()}) holds more than ${MAX_BACKFILL} slots of "${task.schedule}"; backfill at most ${MAX_BACKFILL} per call (the ${MAX_BACKFILL}th is ${slots[MAX_BACKFILL - 1].toISOString()}).`, [{ path: '/to', message: `the range holds more than ${MAX_BACKFILL} slots` }]);
            }
            const taken = new Set((await jobSlotsOfTask(trx, id, from, to)).map((d) => d.getTime()));
            const existing = slots.filter((s) => taken.has(s.getTime()));
            const free = slots.filter((s) => !taken.has(s.getTime()));
            const openJobId = task.concurrencyPolicy === 'forbid' ? await jobOpenOfTask(trx, id) : null;
            const plan = planBackfill({ timing, concurrencyPolicy: task.concurrencyPolicy, openJobId }, free);
            const replaced = plan.replaceOpen && plan.submissions.length > 0 ? (await jobCancelOpenOfTasks(trx, [id], now)).length : 0;
            const jobs = await jobSubmitSlots(trx, id, plan.submissions, now);
            return { jobs, existing, skipped: plan.skipped, replaced };
        });
        this.ctx.metrics?.periodicSlots('cancelled', result.replaced);
        this.ctx.logger.info({ taskId: id, from, to, submitted: result.jobs.length, existing: result.existing.length, skipped: result.skipped.length }, 'periodic task backfilled');
        return { jobs: result.jobs, existing: result.existing, skipped: result.skipped };
    }
}
/** The fields of API.md's "Periodic tasks you can leave alone" as stored (undefined: not given). */
function parseLeaveAlone(input) {
    const positive = (v, path) => {
        const ms = parseDuration(v, path);
        if (ms <= 0)
            throw new InvalidInputError(`${path.slice(1)} must be longer than 0`, [{ path, message: 'must be longer than 0' }]);
        return ms;
    };
    const out = {};
    if (input.catchUpWindow !== undefined)
        out.catchUpWindow = input.catchUpWindow === null ? null : positive(input.catchUpWindow, '/catchUpWindow');
    if (input.alertAfter !== undefined)
        out.alertAfter = input.alertAfter === null ? null : positive(input.alertAfter, '/alertAfter');
    if (input.endAt !== undefined)
        out.endAt = input.endAt === null ? null : new Date(input.endAt);
    return out;
}
function notFound(id) {
    return new NotFoundError(`There is no periodic task with id "${id}".`);
}
//# sourceMappingURL=periodic-tasks.js.map