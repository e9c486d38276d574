import { sql } from 'kysely';
import { compiledOnce } from './compile.js';
import { ms, OPEN } from './sql.js';
/** The job a row becomes when inserted with `id` at `now` (every column is set by the INSERT). */
export function insertedJob(j, id, now) {
    return {
        id: String(id),
        type: j.type,
        group: j.group,
        args: j.args ?? null,
        subject: j.subject,
        submitter: j.submitter,
        priority: j.priority,
        state: 'queued',
        runAt: j.runAt,
        attempts: 0,
        maxAttempts: j.maxAttempts,
        uniqueKey: j.uniqueKey,
        periodicTaskId: null,
        scheduledAt: null,
        timebox: j.timebox,
        worker: null,
        startedAt: null,
        leaseExpiresAt: null,
        deadline: null,
        finishedAt: null,
        progress: null,
        result: null,
        error: null,
        createdAt: now,
        updatedAt: now,
        traceparent: j.traceparent,
        checkpoint: null,
        startBy: j.startBy,
        after: [],
        onDependencyFailure: 'cancel',
    };
}
/** No job with this key was created within `forMs` before `now` (uniqueFor; final jobs count too). */
export const RECENT_HOLDER_ABSENT = (key, forMs, now) => sql `NOT EXISTS (SELECT 1 FROM job x WHERE x.unique_key = ${key} AND x.unique_key IS NOT NULL AND x.created_at > ${now} - ${ms(forMs)})`;
export const ON_UNIQUE_KEY_CONFLICT = sql `ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND state IN ${OPEN} DO NOTHING`;
/** The values of a row's columns as statement parameters (args as JSON text). */
export const rowValues = (j) => ({
    type: j.type,
    group: j.group,
    args: j.args === undefined || j.args === null ? null : JSON.stringify(j.args),
    subject: j.subject,
    submitter: j.submitter,
    priority: j.priority,
    maxAttempts: j.maxAttempts,
    timebox: j.timebox,
    traceparent: j.traceparent,
    startBy: j.startBy,
});
/**
 * Inserts one job. With a uniqueKey held by an open job — or with uniqueFor, by any job created
 * within it — inserts nothing and returns null: the caller then reads the holder with
 * jobFindByUniqueKeys (a new snapshot sees it even when it was committed by a concurrent insert
 * after this statement began). Both checks are part of the one INSERT.
 */
export async function jobInsert(db, j, now) {
    const unique = j.uniqueKey !== null;
    const uniqueFor = unique && j.uniqueFor !== null && j.uniqueFor !== undefined;
    const values = {
        ...rowValues(j),
        runAt: j.runAt,
        uniqueKey: j.uniqueKey,
        uniqueFor: uniqueFor ? j.uniqueFor : null,
        now,
    };
    const rows = await compiledOnce(db, uniqueFor ? 'insert+unique-for' : unique ? 'insert+unique' : 'insert', values, (v) => sql `
    INSERT INTO job (type, group_, args, subject, submitter, priority, run_at, max_attempts, unique_key, timebox, traceparent, start_by,
                     created_at, updated_at)
    ${uniqueFor ? sql `SELECT` : sql `VALUES (`} ${v.type}, ${v.group}, ${v.args}::jsonb, ${v.subject}, ${v.submitter}, ${v.priority}, ${v.runAt}::timestamptz,
            ${v.maxAttempts}::int, ${v.uniqueKey}, ${v.timebox}::bigint, ${v.traceparent}, ${v.startBy}::timestamptz, ${v.now}::timestamptz,
            ${v.now}::timestamptz ${uniqueFor ? sql `WHERE ${RECENT_HOLDER_ABSENT(sql `${v.uniqueKey}::text`, sql `${v.uniqueFor}::bigint`, sql `${v.now}::timestamptz`)}` : sql `)`}
    ${unique ? ON_UNIQUE_KEY_CONFLICT : sql ``}
    RETURNING id`);
    return rows[0] ? insertedJob(j, rows[0].id, now) : null;
}
//# sourceMappingURL=insert.js.map