/**
 * All SQL on periodic_task, and the PeriodicScheduler's batch statement (take, advance and submit); the other job
 * statements of periodic tasks (trigger, backfill, policy replace) are under job/.
 * Every "now" is a parameter (the caller's Clock), never the database's now().
 */
import { sql } from 'kysely';
import { CHANNELS } from '../db/notifications.js';
import { isUniqueViolation } from '../db/pg-errors.js';
import { replacedEvents, replacedSet } from './job/replaced.js';
const iso = (d) => (d === null ? null : d.toISOString());
const json = (v) => (v === undefined || v === null ? null : JSON.stringify(v));
export function taskFromRow(r) {
    return {
        id: r.id,
        task: r.task,
        group: r.group_,
        args: r.args ?? null,
        subject: r.subject,
        submitter: r.submitter,
        priority: r.priority,
        owner: r.owner,
        enabled: r.enabled,
        schedule: r.timer,
        timezone: r.timezone,
        firstRunAt: r.first_run_at,
        tolerance: r.tolerance,
        timebox: r.timebox,
        concurrencyPolicy: r.concurrency_policy,
        misfirePolicy: r.misfire_policy,
        catchUpLimit: r.catch_up_limit,
        maxAttempts: r.max_attempts,
        catchUpWindow: r.catch_up_window,
        endAt: r.end_at,
        alertAfter: r.alert_after,
        lastSuccessAt: r.last_success_at,
        lastFailureAt: r.last_failure_at,
        consecutiveFailures: r.consecutive_failures,
        overdueAt: r.overdue_at,
        nextRun: r.nextrun,
        lastRun: r.last_run,
        worker: r.worker,
        marked: r.marked,
        state: r.state ?? null,
        createdAt: r.created,
        updatedAt: r.updated,
    };
}
function columns(v) {
    const c = {};
    if (v.task !== undefined)
        c.task = v.task;
    if (v.group !== undefined)
        c.group_ = v.group;
    if (v.args !== undefined)
        c.args = json(v.args);
    if (v.subject !== undefined)
        c.subject = v.subject;
    if (v.submitter !== undefined)
        c.submitter = v.submitter;
    if (v.priority !== undefined)
        c.priority = v.priority;
    if (v.owner !== undefined)
        c.owner = v.owner;
    if (v.enabled !== undefined)
        c.enabled = v.enabled;
    if (v.schedule !== undefined)
        c.timer = v.schedule;
    if (v.timezone !== undefined)
        c.timezone = v.timezone;
    if (v.firstRunAt !== undefined)
        c.first_run_at = iso(v.firstRunAt);
    if (v.tolerance !== undefined)
        c.tolerance = v.tolerance;
    if (v.timebox !== undefined)
        c.timebox = v.timebox;
    if (v.concurrencyPolicy !== undefined)
        c.concurrency_policy = v.concurrencyPolicy;
    if (v.misfirePolicy !== undefined)
        c.misfire_policy = v.misfirePolicy;
    if (v.catchUpLimit !== undefined)
        c.catch_up_limit = v.catchUpLimit;
    if (v.maxAttempts !== undefined)
        c.max_attempts = v.maxAttempts;
    if (v.catchUpWindow !== undefined)
        c.catch_up_window = v.catchUpWindow;
    if (v.endAt !== undefined)
        c.end_at = iso(v.endAt);
    if (v.alertAfter !== undefined)
        c.alert_after = v.alertAfter;
    if (v.overdueAt !== undefined)
        c.overdue_at = iso(v.overdueAt);
    if (v.nextRun !== undefined)
        c.nextrun = iso(v.nextRun);
    return c;
}
/** Wakes the PeriodicScheduler of every instance (delivered when the transaction commits). */
const notifyTasks = sql `pg_notify(${CHANNELS.tasks}, '')`;
/** A task row returned next to the notification that told the schedulers about it. */
function withoutNotified(row) {
    const { _notified, ...rest } = row;
    void _notified;
    return rest;
}
/** Inserts a task; null when the id is taken. Notifies the schedulers. */
export async function taskInsert(db, id, values, now) {
    const row = await db.kysely
        .insertInto('periodic_task')
        .values({ ...columns(values), id, created: now, updated: now })
        .onConflict((oc) => oc.column('id').doNothing())
        .returningAll()
        .returning(notifyTasks.as('_notified'))
        .executeTakeFirst();
    return row ? withoutNotified(row) : null;
}
export async function taskGet(db, id, options = {}) {
    let q = db.kysely.selectFrom('periodic_task').selectAll().where('id', '=', id);
    if (options.forUpdate)
        q = q.forUpdate();
    return (await q.executeTakeFirst()) ?? null;
}
/** One page in id order; asks for limit + 1 rows so the caller knows whether there is more. */
export async function taskList(db, f) {
    let q = db.kysely.selectFrom('periodic_task').selectAll();
    if (f.owner !== undefined)
        q = q.where('owner', '=', f.owner);
    if (f.task !== undefined)
        q = q.where('task', '=', f.task);
    if (f.enabled !== undefined)
        q = q.where('enabled', '=', f.enabled);
    // each status as healthOf reads it, first match wins: disabled, overdue, failing, ok
    if (f.health !== undefined) {
        const now = f.health.now;
        const notOverdue = sql `(overdue_at IS NULL OR overdue_at > ${now})`;
        const status = f.health.status;
        if (status === 'disabled')
            q = q.where(sql `NOT enabled`);
        if (status === 'overdue')
            q = q.where(sql `enabled AND overdue_at <= ${now}`);
        if (status === 'failing')
            q = q.where(sql `enabled AND consecutive_failures > 0 AND ${notOverdue}`);
        if (status === 'ok')
            q = q.where(sql `enabled AND consecutive_failures = 0 AND ${notOverdue}`);
    }
    if (f.after !== undefined)
        q = q.where('id', '>', f.after);
    return q
        .orderBy('id')
        .limit(f.limit + 1)
        .execute();
}
/** Writes changed columns (and `updated`); notifies the schedulers. */
export async function taskPatch(db, id, values, now) {
    const row = await db.kysely
        .updateTable('periodic_task')
        .set({ ...columns(values), updated: now })
        .where('id', '=', id)
        .returningAll()
        .returning(notifyTasks.as('_notified'))
        .executeTakeFirst();
    return row ? withoutNotified(row) : null;
}
export async function taskDelete(db, id) {
    const r = await db.kysely.deleteFrom('periodic_task').where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
}
export async function taskDeleteByOwner(db, owner) {
    const r = await db.kysely.deleteFrom('periodic_task').where('owner', '=', owner).executeTakeFirst();
    return Number(r.numDeletedRows);
}
/**
 * Takes up to `limit` of the earliest enabled due tasks (nextrun <= now) that carry no mark, or a
 * stale one, by locking their rows: FOR UPDATE SKIP LOCKED, so tasks another instance is handling
 * right now are passed over, never waited for. The lock is the mark of a scheduler batch: it lasts
 * exactly as long as the batch's transaction, and vanishes with the connection of an instance that
 * dies. For forbid tasks it also answers whether an open job exists, and for tasks whose runs are
 * retried, which of their open jobs are retries waiting (job_open_by_task_idx).
 */
export async function taskTakeDue(db, p) {
    const { rows } = await sql `
    SELECT t.id, t.timer, t.timezone, t.created, t.first_run_at, t.tolerance, t.timebox,
           t.concurrency_policy, t.misfire_policy, t.catch_up_limit, t.catch_up_window, t.end_at,
           t.alert_after, t.last_success_at, t.overdue_at, t.max_attempts, t.nextrun
      FROM periodic_task t
     WHERE t.enabled AND t.nextrun <= ${p.now}
       AND (t.marked IS NULL OR t.marked <= ${p.staleBefore})
     ORDER BY t.nextrun
     LIMIT ${p.limit}
       FOR UPDATE OF t SKIP LOCKED`.execute(db.kysely);
    // The open jobs of the forbid tasks and of tasks that retry, in one statement for the whole
    // batch. As a subquery per task it was planned with the job table's statistics, and while those
    // said "empty" (a new database, or before autovacuum's first look) each of a batch's thousand
    // subqueries scanned the whole table, which the other lanes were filling at the same moment.
    // A task whose runs were never retried (allow or replace, maxAttempts 1) needs no look.
    const probe = rows.filter((r) => r.concurrency_policy === 'forbid' || r.max_attempts > 1).map((r) => r.id);
    const open = new Map();
    const retries = new Map();
    if (probe.length > 0) {
        const found = await sql `
      SELECT periodic_task_id, id, state = 'queued' AND attempts > 0 AS retry FROM job
       WHERE periodic_task_id = ANY(${probe}::text[]) AND state IN ('queued', 'running')
       ORDER BY periodic_task_id, id`.execute(db.kysely);
        for (const r of found.rows) {
            if (r.retry)
                retries.set(r.periodic_task_id, [...(retries.get(r.periodic_task_id) ?? []), r.id]);
            else if (!open.has(r.periodic_task_id))
                open.set(r.periodic_task_id, r.id);
        }
    }
    return rows.map(({ max_attempts, ...r }) => {
        void max_attempts;
        return {
            ...r,
            open_job_id: r.concurrency_policy === 'forbid' ? (open.get(r.id) ?? null) : null,
            retry_ids: retries.get(r.id) ?? [],
        };
    });
}
/** Clears every mark of `worker` (scheduler stop). */
export async function taskUnmark(db, worker) {
    const r = await db.kysely
        .updateTable('periodic_task')
        .set({ worker: null, marked: null })
        .where('worker', '=', worker)
        .executeTakeFirst();
    return Number(r.numUpdatedRows);
}
/** Clears marks made at or before `staleBefore` (their instance died); skips rows being worked on. */
export async function taskClearStaleMarks(db, staleBefore) {
    const r = await sql `
    UPDATE periodic_task SET worker = NULL, marked = NULL
     WHERE id IN (SELECT id FROM periodic_task WHERE marked <= ${staleBefore} FOR UPDATE SKIP LOCKED)`.execute(db.kysely);
    return Number(r.numAffectedRows ?? 0);
}
/**
 * When the scheduler has something to do next: the earliest nextrun of an enabled unmarked task,
 * or the moment a current mark turns stale, whichever comes first. Both are index lookups.
 */
export async function taskEarliestNextRun(db, staleMs) {
    const { rows } = await sql `
    SELECT least(
      (SELECT min(nextrun) FROM periodic_task WHERE enabled AND nextrun IS NOT NULL AND marked IS NULL),
      (SELECT min(marked) FROM periodic_task WHERE marked IS NOT NULL) + make_interval(secs => ${staleMs / 1000})
    ) AS at`.execute(db.kysely);
    return rows[0]?.at ?? null;
}
/**
 * One statement for the whole batch: advances and unmarks every task, cancels the open jobs of
 * replace tasks and inserts the jobs (type, group, args, priority, subject and submitter read from
 * the task rows), all from arrays (unnest): no round trip per task.
 */
export async function taskAdvanceAndSubmit(db, w, now) {
    if (w.advance.length === 0)
        return { inserted: [], cancelled: [], dropped: [] };
    const s = w.submit;
    const r = w.records ?? [];
    const advanceIds = w.advance.map((a) => a.taskId);
    // Both reads of periodic_task are forced to be one primary-key probe per task (LATERAL …
    // OFFSET 0): joined to unnest() directly, the planner hashes the whole table for every batch
    // while the table is small enough to look cheap, and that is O(tasks) per batch.
    const { rows } = await sql `
    WITH advanced AS (
      UPDATE periodic_task t
         SET nextrun = a.nextrun, worker = NULL, marked = NULL, overdue_at = coalesce(a.overdue_at, t.overdue_at)
        FROM (SELECT x.nextrun, x.overdue_at, p.ctid AS row_id
                FROM unnest(${advanceIds}::text[], ${w.advance.map((a) => iso(a.nextRun))}::timestamptz[],
                            ${w.advance.map((a) => iso(a.overdueAt ?? null))}::timestamptz[]) AS x(id, nextrun, overdue_at)
                CROSS JOIN LATERAL (SELECT ctid FROM periodic_task WHERE id = x.id OFFSET 0) p) a
       WHERE t.ctid = a.row_id
    ), dropped AS (
      -- a retry never outlives its slot: compare-and-set on queued, so one leased meanwhile runs on
      UPDATE job
         SET state = 'dropped', finished_at = ${now}, lease_token = NULL, updated_at = ${now},
             error = jsonb_build_object('kind', 'dropped', 'reason', 'next-run-due',
               'message', 'retry dropped: the next run of periodic task ' || periodic_task_id || ' came due', 'at', ${iso(now)}::text)
       WHERE id = ANY(${w.dropRetries ?? []}::bigint[]) AND state = 'queued'
      RETURNING id, periodic_task_id, attempts, error
    ), drop_events AS (
      INSERT INTO job_event (job_id, at, kind, attempt, detail)
      SELECT d.id, ${now}, 'dropped', d.attempts, jsonb_build_object('reason', 'next-run-due', 'error', d.error) FROM dropped d
    ), recorded AS (
      INSERT INTO periodic_slot (task_id, slot, last_slot, slots, outcome, job_id, timer, timezone, anchor, first_run_at, recorded_at)
      SELECT x.* , ${now}::timestamptz
        FROM unnest(${r.map((x) => x.taskId)}::text[], ${r.map((x) => iso(x.from))}::timestamptz[],
                    ${r.map((x) => iso(x.to))}::timestamptz[], ${r.map((x) => x.slots)}::int[], ${r.map((x) => x.outcome)}::text[],
                    ${r.map((x) => x.blockedBy)}::bigint[], ${r.map((x) => x.schedule?.timer ?? null)}::text[],
                    ${r.map((x) => x.schedule?.timezone ?? null)}::text[], ${r.map((x) => iso(x.schedule?.anchor ?? null))}::timestamptz[],
                    ${r.map((x) => iso(x.schedule?.firstRunAt ?? null))}::timestamptz[])
             AS x(task_id, slot, last_slot, slots, outcome, job_id, timer, timezone, anchor, first_run_at)
      ON CONFLICT DO NOTHING
    ), cancelled AS (
      UPDATE job
         SET ${replacedSet(now)}
       WHERE periodic_task_id = ANY(${w.replace}::text[]) AND state IN ('queued', 'running')
         AND id <> ALL(${w.dropRetries ?? []}::bigint[])
      RETURNING id, periodic_task_id, lease_token, attempts, worker, error
    ), cancel_events AS (
      ${replacedEvents('cancelled', now)}
    ), inserted AS (
      INSERT INTO job (type, group_, args, subject, submitter, priority, run_at, max_attempts,
                       periodic_task_id, scheduled_at, timebox, run_interval, run_tolerance,
                       created_at, updated_at)
      SELECT t.task, t.group_, t.args, t.subject, t.submitter, t.priority, x.slot, t.max_attempts,
             t.id, x.slot, x.timebox, x.run_interval, x.run_tolerance, ${now}, ${now}
        FROM unnest(${s.map((i) => i.taskId)}::text[],
                    ${s.map((i) => iso(i.scheduledAt))}::timestamptz[],
                    ${s.map((i) => i.timebox)}::bigint[],
                    ${s.map((i) => i.runInterval)}::bigint[],
                    ${s.map((i) => i.runTolerance)}::bigint[]) AS x(task_id, slot, timebox, run_interval, run_tolerance)
        CROSS JOIN LATERAL (SELECT task, group_, args, subject, submitter, priority, max_attempts, id
                              FROM periodic_task WHERE id = x.task_id OFFSET 0) t
      ${w.skipExisting ? sql `ON CONFLICT (periodic_task_id, scheduled_at) WHERE periodic_task_id IS NOT NULL DO NOTHING` : sql ``}
      RETURNING id, periodic_task_id, scheduled_at
    )
    SELECT 'job' AS kind, id, periodic_task_id, scheduled_at FROM inserted
    UNION ALL
    SELECT 'cancelled', id, periodic_task_id, NULL FROM cancelled
    UNION ALL
    SELECT 'dropped', id, periodic_task_id, NULL FROM dropped`.execute(db.kysely);
    const out = { inserted: [], cancelled: [], dropped: [] };
    for (const row of rows) {
        if (row.kind === 'job')
            out.inserted.push({ id: String(row.id), periodicTaskId: row.periodic_task_id, scheduledAt: row.scheduled_at });
        else
            out[row.kind].push({ id: String(row.id), periodicTaskId: row.periodic_task_id });
    }
    return out;
}
/** True for the error a batch gets when a slot it submits already has a job. */
export function isSlotConflict(err) {
    return isUniqueViolation(err, 'job_periodic_slot_key');
}
//# sourceMappingURL=periodic-tasks.js.map