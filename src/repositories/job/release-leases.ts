import { sql } from 'kysely';
import type { Executor } from '../../db/executor.js';
import { iso, JOBS_CHANNEL } from './sql.js';

/**
 * Gives back jobs leased for a worker that went away before it received them: queued again with
 * the attempt not counted, waiting workers woken. A periodic task's lastRun that this lease set
 * (equal to the job's startedAt) is cleared, so the drop check does not drop the job it gave back.
 */
export async function jobReleaseLeases(db: Executor, leases: { id: string; leaseToken: string }[], now: Date): Promise<number> {
  if (leases.length === 0) return 0;
  const { rows } = await sql<{ released: number }>`
    WITH given AS (
      SELECT * FROM unnest(${leases.map((l) => l.id)}::bigint[], ${leases.map((l) => l.leaseToken)}::uuid[]) AS g(id, token)
    ),
    before AS (
      SELECT j.id, j.periodic_task_id, j.started_at, j.attempts, j.worker
      FROM job j JOIN given g ON j.id = g.id AND j.lease_token = g.token
      WHERE j.state = 'running'
    ),
    upd AS (
      UPDATE job j SET
        state = 'queued', attempts = greatest(j.attempts - 1, 0), worker = NULL, lease_token = NULL,
        lease_expires_at = NULL, lease_duration = NULL, started_at = NULL, deadline = NULL, updated_at = ${now}
      FROM before b
      WHERE j.id = b.id AND j.state = 'running'
      RETURNING j.id
    ),
    tasks AS (
      UPDATE periodic_task t SET last_run = NULL
      FROM before b JOIN upd u ON u.id = b.id
      WHERE t.id = b.periodic_task_id AND t.last_run = b.started_at
    ),
    events AS (
      INSERT INTO job_event (job_id, at, kind, attempt, worker, detail)
      SELECT b.id, ${now}, 'given-back', b.attempts, b.worker,
             jsonb_build_object('startedAt', ${iso(sql`b.started_at`)}, 'reason', 'the worker disconnected before it received the lease')
      FROM before b JOIN upd u ON u.id = b.id
    ),
    notify AS (SELECT pg_notify(${JOBS_CHANNEL}, '') FROM upd LIMIT 1)
    SELECT (SELECT count(*) FROM upd)::int AS released, (SELECT count(*) FROM notify) AS notified`.execute(db.kysely);
  return rows[0]?.released ?? 0;
}
