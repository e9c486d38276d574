import { sql } from 'kysely';
import { compiledOnce } from './compile.js';
import { insertedJob, ON_UNIQUE_KEY_CONFLICT, RECENT_HOLDER_ABSENT } from './insert.js';
/** The columns of `insertRecords`' objects, for jsonb_to_recordset. */
export const INSERT_COLUMNS = sql `ord int, type text, group_ text, args jsonb, subject text, submitter text, priority int,
  run_at timestamptz, max_attempts int, unique_key text, timebox bigint, traceparent text, start_by timestamptz, unique_for bigint`;
const INSERT_RECORD = sql `i(${INSERT_COLUMNS})`;
/** The rows to insert as objects of INSERT_COLUMNS, `ord` their position. */
export function insertRecords(jobs) {
    return jobs.map((j, ord) => ({
        ord,
        type: j.type,
        group_: j.group,
        args: j.args ?? null,
        subject: j.subject,
        submitter: j.submitter,
        priority: j.priority,
        run_at: j.runAt.toISOString(),
        max_attempts: j.maxAttempts,
        unique_key: j.uniqueKey,
        timebox: j.timebox,
        traceparent: j.traceparent,
        start_by: j.startBy?.toISOString() ?? null,
        unique_for: j.uniqueKey !== null ? (j.uniqueFor ?? null) : null,
    }));
}
/**
 * Inserts many jobs with ONE multi-row INSERT (all or nothing). Returns, in input order, each
 * inserted job, or null where an open job already held its uniqueKey (also when an earlier entry
 * of the same batch took the key, or, with uniqueFor, a job created within it held the key). Only ids come back (the rest is known), which keeps large
 * batches cheap.
 *
 * Matching ids to input rows: without unique keys every row is inserted, and the identity values
 * are drawn row by row in input order (jsonb_to_recordset yields the array in order), so the sorted
 * ids are the input order. With unique keys some rows may be skipped, so ids are drawn first in a
 * CTE, carried next to each row's position, and joined back.
 */
export async function jobInsertMany(db, jobs, now) {
    if (jobs.length === 0)
        return [];
    const input = JSON.stringify(insertRecords(jobs));
    const values = { input, now };
    if (!jobs.some((j) => j.uniqueKey !== null)) {
        const rows = await compiledOnce(db, 'insert-many', values, (v) => sql `
      INSERT INTO job (type, group_, args, subject, submitter, priority, run_at, max_attempts, unique_key, timebox, traceparent, start_by,
                       created_at, updated_at)
      SELECT type, group_, args, subject, submitter, priority, run_at, max_attempts, unique_key, timebox, traceparent, start_by,
             ${v.now}::timestamptz, ${v.now}::timestamptz
      FROM jsonb_to_recordset(${v.input}::jsonb) AS ${INSERT_RECORD}
      RETURNING id`);
        if (rows.length !== jobs.length)
            throw new Error(`inserted ${rows.length} of ${jobs.length} jobs`);
        const ids = rows.map((r) => Number(r.id)).sort((a, b) => a - b);
        return jobs.map((j, i) => insertedJob(j, ids[i], now));
    }
    const rows = await compiledOnce(db, 'insert-many+unique', values, (v) => {
        const n = sql `${v.now}::timestamptz`;
        return sql `
    WITH seq AS (SELECT pg_get_serial_sequence('job', 'id')::regclass AS s),
    input AS MATERIALIZED (
      SELECT nextval(seq.s) AS new_id, i.* FROM seq, jsonb_to_recordset(${v.input}::jsonb) AS ${INSERT_RECORD}
    ),
    ins AS (
      INSERT INTO job (id, type, group_, args, subject, submitter, priority, run_at, max_attempts, unique_key, timebox, traceparent, start_by,
                       created_at, updated_at)
      OVERRIDING SYSTEM VALUE
      SELECT new_id, type, group_, args, subject, submitter, priority, run_at, max_attempts, unique_key, timebox, traceparent, start_by, ${n}, ${n}
      FROM input
      WHERE unique_for IS NULL OR ${RECENT_HOLDER_ABSENT(sql `input.unique_key`, sql `input.unique_for`, n)}
      ORDER BY ord
      ${ON_UNIQUE_KEY_CONFLICT}
      RETURNING id
    )
    SELECT i.ord, ins.id FROM input i LEFT JOIN ins ON ins.id = i.new_id`;
    });
    const out = jobs.map(() => null);
    for (const r of rows)
        if (r.id !== null)
            out[r.ord] = insertedJob(jobs[r.ord], r.id, now);
    return out;
}
//# sourceMappingURL=insert-many.js.map