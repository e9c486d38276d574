import { sql } from 'kysely';
import type { Executor } from '../../db/executor.js';
import type { Job } from '../../domain/job.js';
import { compiledOnce } from './compile.js';
import { OPEN } from './sql.js';

/** A job ready to insert: defaults applied, durations in ms. */
export type JobInsertRow = Pick<
  Job,
  'type' | 'group' | 'args' | 'subject' | 'submitter' | 'priority' | 'runAt' | 'maxAttempts' | 'uniqueKey' | 'timebox' | 'traceparent'
>;

/** The job a row becomes when inserted with `id` at `now` (every column is set by the INSERT). */
export function insertedJob(j: JobInsertRow, id: number | string, now: Date): Job {
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
  };
}

export const ON_UNIQUE_KEY_CONFLICT = sql`ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND state IN ${OPEN} DO NOTHING`;

/**
 * Inserts one job. With a uniqueKey held by an open job, inserts nothing and returns null: the
 * caller then reads the holder with jobFindOpenByUniqueKeys (a new snapshot sees it even when it
 * was committed by a concurrent insert after this statement began).
 */
export async function jobInsert(db: Executor, j: JobInsertRow, now: Date): Promise<Job | null> {
  const unique = j.uniqueKey !== null;
  const values = {
    type: j.type,
    group: j.group,
    args: j.args === undefined || j.args === null ? null : JSON.stringify(j.args),
    subject: j.subject,
    submitter: j.submitter,
    priority: j.priority,
    runAt: j.runAt,
    maxAttempts: j.maxAttempts,
    uniqueKey: j.uniqueKey,
    timebox: j.timebox,
    traceparent: j.traceparent,
    now,
  };
  const rows = await compiledOnce(
    db,
    unique ? 'insert+unique' : 'insert',
    values,
    (v) => sql<{ id: number }>`
    INSERT INTO job (type, group_, args, subject, submitter, priority, run_at, max_attempts, unique_key, timebox, traceparent, created_at, updated_at)
    VALUES (${v.type}, ${v.group}, ${v.args}::jsonb, ${v.subject}, ${v.submitter}, ${v.priority}, ${v.runAt}, ${v.maxAttempts},
            ${v.uniqueKey}, ${v.timebox}, ${v.traceparent}, ${v.now}, ${v.now})
    ${unique ? ON_UNIQUE_KEY_CONFLICT : sql``}
    RETURNING id`,
  );
  return rows[0] ? insertedJob(j, rows[0].id, now) : null;
}
