import { sql } from 'kysely';
import type { Executor } from '../../db/executor.js';
import type { Job } from '../../domain/job.js';
import { compiledOnce } from './compile.js';
import { type JobInsertRow, rowValues } from './insert.js';
import { jobCols, jobFromRow, type JobRow } from './row.js';
import { ms } from './sql.js';

/** A debounced submission: the row (with its uniqueKey) and its debounce window in ms. */
export type DebouncedRow = JobInsertRow & { uniqueKey: string; debounce: number; debounceMax: number };

/**
 * A debounced submission in ONE statement: a new job holding the key (runAt = now + debounce,
 * debounce_until = now + debounceMax), or, when a queued job that was never leased holds it, that
 * job takes the args and runAt = min(now + debounce, its debounce_until). The partial unique index
 * on debounce_key decides between the two under concurrency (no check-then-act); a job that a lease
 * took meanwhile no longer holds the key, so the submission then makes a new job.
 *
 * A job with a startBy is never pushed so late that it would expire instead of running: runAt stays
 * at or before startBy − debounce (the job keeps its first submission's startBy, as debounceMax counts
 * from it), so workers get one debounce period to lease it. A startBy nearer than that runs it now.
 */
export async function jobDebounce(db: Executor, j: DebouncedRow, now: Date): Promise<{ job: Job; created: boolean }> {
  const values = {
    ...rowValues(j),
    key: j.uniqueKey,
    debounce: j.debounce,
    debounceMax: j.debounceMax,
    now,
  };
  const rows = await compiledOnce(db, 'insert+debounce', values, (v) => {
    const n = sql`${v.now}::timestamptz`;
    const d = ms(sql`${v.debounce}::bigint`);
    return sql<JobRow & { created: boolean }>`
    INSERT INTO job AS x (type, group_, args, subject, submitter, priority, run_at, max_attempts, debounce_key, debounce_until, timebox,
                          traceparent, start_by, created_at, updated_at)
    VALUES (${v.type}, ${v.group}, ${v.args}::jsonb, ${v.subject}, ${v.submitter}, ${v.priority},
            least(${n} + ${d}, ${v.startBy}::timestamptz - ${d}),
            ${v.maxAttempts}::int, ${v.key}, ${n} + ${ms(sql`${v.debounceMax}::bigint`)}, ${v.timebox}::bigint, ${v.traceparent},
            ${v.startBy}::timestamptz, ${n}, ${n})
    ON CONFLICT (debounce_key) WHERE state = 'queued' AND debounce_until IS NOT NULL
    DO UPDATE SET args = EXCLUDED.args, run_at = least(${n} + ${d}, x.debounce_until, x.start_by - ${d}), updated_at = EXCLUDED.updated_at
    RETURNING ${jobCols('x')}, (x.xmax = 0) AS created`;
  });
  const r = rows[0]!;
  return { job: jobFromRow(r), created: r.created };
}
