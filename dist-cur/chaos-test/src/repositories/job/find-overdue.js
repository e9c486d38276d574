import { sql } from 'kysely';
import { MIN_GRACE_MS } from '../../domain/job.js';
import { graceSql, ms } from './sql.js';
/**
 * A running job (of `job`) that the LeaseReaper must act on at `now`: lease expired before the
 * deadline, or past deadline + grace. Two partial indexes answer it (the grace is at least 1 s).
 */
export const overdueCondition = (now) => sql `job.state = 'running'
  AND ((job.lease_expires_at < ${now}::timestamptz AND (job.deadline IS NULL OR job.deadline > ${now}::timestamptz))
       OR (job.deadline < ${now}::timestamptz - ${ms(sql `${MIN_GRACE_MS}::bigint`)} AND job.deadline + ${graceSql('job')} < ${now}::timestamptz))`;
/**
 * Running jobs the LeaseReaper must act on (domain/job.ts reapDecision), oldest first.
 */
export async function jobFindOverdue(db, now, limit) {
    const { rows } = await sql `
    SELECT id, lease_token, attempts, max_attempts, worker, lease_expires_at, deadline, timebox, periodic_task_id
    FROM job
    WHERE ${overdueCondition(now)}
    ORDER BY least(lease_expires_at, deadline)
    LIMIT ${limit}`.execute(db.kysely);
    return rows.map((r) => ({
        id: String(r.id),
        leaseToken: r.lease_token,
        attempts: r.attempts,
        maxAttempts: r.max_attempts,
        worker: r.worker,
        leaseExpiresAt: r.lease_expires_at,
        deadline: r.deadline,
        timebox: r.timebox === null ? null : Number(r.timebox),
        periodicTaskId: r.periodic_task_id,
    }));
}
//# sourceMappingURL=find-overdue.js.map