import { InvalidInputError, NotFoundError } from '../domain/errors.js';
import { scheduleContext, ScheduleCache, taskTiming } from '../domain/periodic-task.js';
import { ledgerPage, ledgerReadLimit, ledgerUpTo, } from '../domain/run-ledger.js';
import { taskFromRow, taskGet } from '../repositories/periodic-tasks.js';
import { taskRecentSlotJobs, taskRecentSlotRecords, taskSlotJobs, taskSlotRecords, } from '../repositories/task-runs.js';
import { decodeCursor, encodeCursor } from './cursor.js';
const CURSOR = /^(\d{1,15}):([01])$/;
/** The run ledger of periodic tasks (GET /periodic-tasks/{id}/runs): see domain/run-ledger.ts. */
export class TaskRunsService {
    ctx;
    schedules = new ScheduleCache(1_000);
    constructor(ctx) {
        this.ctx = ctx;
    }
    async runs(id, q) {
        const now = this.ctx.clock.now();
        if (q.from !== undefined && q.to !== undefined && q.from.getTime() > q.to.getTime()) {
            throw new InvalidInputError('from must not be after to', [{ path: '/from', message: 'must not be after to' }]);
        }
        const cursor = q.cursor === undefined ? null : parseCursor(q.cursor);
        const row = await taskGet(this.ctx.db, id);
        if (!row)
            throw new NotFoundError(`There is no periodic task with id "${id}".`);
        const task = taskFromRow(row);
        const from = q.from ?? new Date(0);
        const upTo = ledgerUpTo(now, q.to ?? null, cursor);
        if (upTo.getTime() < from.getTime())
            return { items: [], nextCursor: null };
        const n = ledgerReadLimit(q.limit);
        const [jobs, records] = await Promise.all([
            taskSlotJobs(this.ctx.db, id, from, upTo, n),
            taskSlotRecords(this.ctx.db, id, from, upTo, n),
        ]);
        const page = ledgerPage(this.sources(task, jobs, records), { from, upTo, now, cursor, limit: q.limit });
        return {
            items: page.items,
            nextCursor: page.next === null ? null : encodeCursor('r', `${page.next.slot.getTime()}:${page.next.rank}`),
        };
    }
    /**
     * The newest `limit` entries of the ledger of each task (the console's strips): two statements
     * for all of them, each one index range per task.
     */
    async recent(tasks, limit) {
        const now = this.ctx.clock.now();
        const ids = tasks.map((t) => t.id);
        const n = ledgerReadLimit(limit);
        const [jobs, records] = await Promise.all([
            taskRecentSlotJobs(this.ctx.db, ids, now, n),
            taskRecentSlotRecords(this.ctx.db, ids, now, n),
        ]);
        const out = new Map();
        for (const task of tasks) {
            const src = this.sources(task, jobs.filter((j) => j.task_id === task.id), records.filter((r) => r.task_id === task.id));
            out.set(task.id, ledgerPage(src, { from: new Date(0), upTo: now, now, cursor: null, limit }).items);
        }
        return out;
    }
    sources(task, jobs, records) {
        let current = null;
        try {
            const timing = taskTiming(task, this.schedules);
            current = { schedule: timing.schedule, ctx: scheduleContext(timing), nextRun: task.enabled ? task.nextRun : null };
        }
        catch {
            // a stored schedule this build cannot read has no slots to add
        }
        return { jobs: jobs.map(jobOf), records: records.map((r) => recordOf(r, this.schedules)), current };
    }
}
/** A row of taskSlotRecords as the ledger reads it, its schedule parsed. */
function recordOf(r, schedules) {
    let schedule = null;
    if (r.slots > 1 && r.timer !== null && r.timezone !== null && r.anchor !== null) {
        try {
            const s = schedules.get(r.timer, r.timezone);
            schedule = { schedule: s, ctx: scheduleContext({ createdAt: r.anchor, firstRunAt: r.first_run_at }) };
        }
        catch {
            // unreadable now: the record shows its first slot only
        }
    }
    const j = r.job;
    return {
        slot: r.slot,
        lastSlot: r.last_slot,
        slots: r.slots,
        outcome: r.outcome,
        jobId: r.job_id,
        schedule,
        job: j === null ? null : { state: j.state, attempts: j.attempts, startedAt: j.started_at, finishedAt: j.finished_at, error: j.error },
    };
}
function jobOf(j) {
    return {
        id: j.id,
        slot: j.slot,
        state: j.state,
        attempts: j.attempts,
        startedAt: j.started_at,
        finishedAt: j.finished_at,
        error: j.error,
    };
}
function parseCursor(text) {
    const m = CURSOR.exec(decodeCursor('r', text, (id) => CURSOR.test(id)));
    return { slot: new Date(Number(m[1])), rank: m[2] === '1' ? 1 : 0 };
}
//# sourceMappingURL=task-runs.js.map