import { sql } from 'kysely';
import { compiledOnce } from './compile.js';
import { rowValues } from './insert.js';
import { INSERT_COLUMNS, insertRecords } from './insert-many.js';
import { jobCols, jobFromRow } from './row.js';
import { ms } from './sql.js';
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
export async function jobDebounce(db, j, now) {
    const values = {
        ...rowValues(j),
        key: j.uniqueKey,
        debounce: j.debounce,
        debounceMax: j.debounceMax,
        now,
    };
    const rows = await compiledOnce(db, 'insert+debounce', values, (v) => {
        const n = sql `${v.now}::timestamptz`;
        const d = ms(sql `${v.debounce}::bigint`);
        return sql `
    INSERT INTO job AS x (type, group_, args, subject, submitter, priority, run_at, max_attempts, debounce_key, debounce_until, timebox,
                          traceparent, start_by, created_at, updated_at)
    VALUES (${v.type}, ${v.group}, ${v.args}::jsonb, ${v.subject}, ${v.submitter}, ${v.priority},
            least(${n} + ${d}, ${v.startBy}::timestamptz - ${d}),
            ${v.maxAttempts}::int, ${v.key}, ${n} + ${ms(sql `${v.debounceMax}::bigint`)}, ${v.timebox}::bigint, ${v.traceparent},
            ${v.startBy}::timestamptz, ${n}, ${n})
    ON CONFLICT (debounce_key) WHERE state = 'queued' AND debounce_until IS NOT NULL
    DO UPDATE SET args = EXCLUDED.args, run_at = least(${n} + ${d}, x.debounce_until, x.start_by - ${d}), updated_at = EXCLUDED.updated_at
    RETURNING ${jobCols('x')}, (x.xmax = 0) AS created`;
    });
    const r = rows[0];
    return { job: jobFromRow(r), created: r.created };
}
/**
 * Debounced submissions of concurrent requests in ONE statement (as jobDebounce, each key once):
 * of several submissions of one key, the last one's args and debounce apply, and each of them
 * gets the key's job back; `created` is true for the first submission of a key the statement made
 * a job for. Keys are upserted in key order, so two such statements lock rows in one order. In
 * input order.
 */
export async function jobDebounceMany(db, rows, now) {
    if (rows.length === 0)
        return [];
    const input = JSON.stringify(rows.map((j, ord) => ({
        ...insertRecords([j])[0],
        ord,
        key: j.uniqueKey,
        debounce: j.debounce,
        debounce_max: j.debounceMax,
    })));
    const out = await compiledOnce(db, 'insert+debounce-many', { input, now }, (v) => {
        const n = sql `${v.now}::timestamptz`;
        const d = (alias) => ms(sql `${sql.ref(`${alias}.debounce`)}`);
        return sql `
    WITH input AS MATERIALIZED (
      SELECT * FROM jsonb_to_recordset(${v.input}::jsonb) AS i(${INSERT_COLUMNS}, key text, debounce bigint, debounce_max bigint)
    ),
    last AS MATERIALIZED (SELECT DISTINCT ON (i.key) * FROM input i ORDER BY i.key, i.ord DESC)
    INSERT INTO job AS x (type, group_, args, subject, submitter, priority, run_at, max_attempts, debounce_key, debounce_until, timebox,
                          traceparent, start_by, created_at, updated_at)
    SELECT l.type, l.group_, l.args, l.subject, l.submitter, l.priority, least(${n} + ${d('l')}, l.start_by - ${d('l')}), l.max_attempts,
           l.key, ${n} + ${ms(sql `l.debounce_max`)}, l.timebox, l.traceparent, l.start_by, ${n}, ${n}
    FROM last l
    ORDER BY l.key
    ON CONFLICT (debounce_key) WHERE state = 'queued' AND debounce_until IS NOT NULL
    DO UPDATE SET args = EXCLUDED.args,
                  run_at = (SELECT least(${n} + ${d('l')}, x.debounce_until, x.start_by - ${d('l')}) FROM last l WHERE l.key = EXCLUDED.debounce_key),
                  updated_at = EXCLUDED.updated_at
    RETURNING ${jobCols('x')}, (x.xmax = 0) AS created`;
    });
    const byKey = new Map(out.map((r) => [r.debounce_key, r]));
    const seen = new Set();
    return rows.map((j) => {
        const r = byKey.get(j.uniqueKey);
        if (!r)
            throw new Error(`the debounced submission of ${j.uniqueKey} made no job`);
        const first = !seen.has(j.uniqueKey);
        seen.add(j.uniqueKey);
        return { job: jobFromRow(r), created: r.created && first };
    });
}
//# sourceMappingURL=debounce.js.map