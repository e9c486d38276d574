import { sql } from 'kysely';
import { iso, JOBS_CHANNEL } from './sql.js';
/**
 * Gives leases back: queued again with the attempt not counted (at once, or at `runAt`), waiting
 * workers woken — for a worker that went away before it received its jobs (`reason` disconnected),
 * or one that gives a job back itself (POST /jobs/{id}/release). A periodic task's lastRun that this
 * lease set (equal to the job's startedAt) is cleared, so the drop check does not drop the job it
 * gave back.
 */
export async function jobReleaseLeases(db, leases, now, reason = 'disconnected') {
    if (leases.length === 0)
        return 0;
    const input = leases.map((l) => ({
        id: l.id,
        token: l.leaseToken,
        run_at: l.runAt?.toISOString() ?? null,
        has_state: l.state !== undefined,
        state: l.state ?? null,
    }));
    const why = reason === 'disconnected' ? 'the worker disconnected before it received the lease' : 'given back by the worker';
    const { rows } = await sql `
    WITH given AS MATERIALIZED (
      SELECT * FROM jsonb_to_recordset(${JSON.stringify(input)}::jsonb) AS g(id bigint, token uuid, run_at timestamptz, has_state boolean, state jsonb)
    ),
    before AS (
      SELECT j.id, j.periodic_task_id, j.started_at, j.attempts, j.worker, g.run_at, g.has_state, g.state
      FROM job j JOIN given g ON j.id = g.id AND j.lease_token = g.token
      WHERE j.state = 'running'
    ),
    upd AS (
      UPDATE job j SET
        state = 'queued', attempts = greatest(j.attempts - 1, 0), worker = NULL, lease_token = NULL,
        lease_expires_at = NULL, lease_duration = NULL, started_at = NULL, deadline = NULL, updated_at = ${now},
        run_at = coalesce(b.run_at, j.run_at),
        checkpoint = CASE WHEN b.has_state AND j.periodic_task_id IS NULL THEN b.state ELSE j.checkpoint END
      FROM before b
      WHERE j.id = b.id AND j.state = 'running'
      RETURNING j.id
    ),
    tasks AS (
      UPDATE periodic_task t SET last_run = CASE WHEN t.last_run = b.started_at THEN NULL ELSE t.last_run END,
                                 state = CASE WHEN b.has_state THEN b.state ELSE t.state END
      FROM before b JOIN upd u ON u.id = b.id
      WHERE t.id = b.periodic_task_id AND (t.last_run = b.started_at OR b.has_state)
    ),
    events AS (
      INSERT INTO job_event (job_id, at, kind, attempt, worker, detail)
      SELECT b.id, ${now}, 'given-back', b.attempts, b.worker,
             jsonb_strip_nulls(jsonb_build_object('startedAt', ${iso(sql `b.started_at`)}, 'reason', ${why}::text,
               'retryAt', ${iso(sql `b.run_at`)}))
      FROM before b JOIN upd u ON u.id = b.id
    ),
    -- '' (runnable now) unless every job given back was snoozed: then when the first one is due
    notify AS (
      SELECT pg_notify(${JOBS_CHANNEL}, CASE WHEN bool_or(b.run_at IS NULL) THEN '' ELSE (extract(epoch FROM min(b.run_at)) * 1000)::bigint::text END)
      FROM before b JOIN upd u ON u.id = b.id HAVING count(*) > 0
    )
    SELECT (SELECT count(*) FROM upd)::int AS released, (SELECT count(*) FROM notify) AS notified`.execute(db.kysely);
    return rows[0]?.released ?? 0;
}
//# sourceMappingURL=release-leases.js.map