import { sql } from 'kysely';
/** The history entry of a job cancelled by policy replace (a kept lease token: it was running). */
export function replacedEvents(cte, now) {
    return sql `INSERT INTO job_event (job_id, at, kind, attempt, worker, actor, detail)
    SELECT c.id, ${now}, 'cancelled', CASE WHEN c.lease_token IS NOT NULL THEN c.attempts END,
           CASE WHEN c.lease_token IS NOT NULL THEN c.worker END, 'policy:replace',
           jsonb_build_object('from', CASE WHEN c.lease_token IS NOT NULL THEN 'running' ELSE 'queued' END, 'error', c.error)
    FROM ${sql.table(cte)} c`;
}
/**
 * The cancellation of an open job replaced by a new run (as jobCancel in jobs.ts does it, plus an
 * error saying why). A running job keeps its lease token, so its worker's next heartbeat answers
 * `cancel: true`; a queued job's old token is cleared.
 */
export function replacedSet(now) {
    return sql `state = 'cancelled',
           lease_token = CASE WHEN state = 'running' THEN lease_token ELSE NULL END,
           lease_expires_at = NULL,
           finished_at = ${now},
           updated_at = ${now},
           error = jsonb_build_object('kind', 'replaced', 'at', ${now.toISOString()}::text,
             'message', 'cancelled: replaced by a new run of periodic task ' || periodic_task_id)`;
}
//# sourceMappingURL=replaced.js.map