import { sql } from 'kysely';
import { jobFromRow } from './row.js';
import { iso, JOBS_CHANNEL } from './sql.js';
/**
 * Applies the reaper's decisions in ONE statement, each a compare-and-set on the lease token and
 * state running (a report or a new lease in between wins). Requeued and failed jobs lose their
 * token, so a late report of the old lease is lease-lost. Wakes waiting workers when any job was
 * queued again. Returns the jobs changed.
 */
export async function jobReap(db, actions, now) {
    if (actions.length === 0)
        return [];
    const input = actions.map((a) => ({
        id: a.id,
        token: a.leaseToken,
        state: a.state,
        run_at: a.runAt?.toISOString() ?? null,
        error: a.error,
    }));
    const n = sql `${now}::timestamptz`;
    const { rows } = await sql `
    WITH input AS MATERIALIZED (
      SELECT * FROM jsonb_to_recordset(${JSON.stringify(input)}::jsonb) AS i(id bigint, token uuid, state text, run_at timestamptz, error jsonb)
    ),
    upd AS (
      UPDATE job j SET
        state = i.state,
        run_at = coalesce(i.run_at, j.run_at),
        error = i.error,
        lease_token = NULL,
        lease_expires_at = NULL,
        deadline = CASE WHEN i.state = 'queued' THEN NULL ELSE j.deadline END,
        finished_at = CASE WHEN i.state = 'queued' THEN NULL ELSE ${n} END,
        updated_at = ${n}
      FROM input i
      WHERE j.id = i.id AND j.lease_token = i.token AND j.state = 'running'
      RETURNING j.*
    ),
    events AS (
      INSERT INTO job_event (job_id, at, kind, attempt, worker, detail)
      SELECT u.id, ${n}, CASE WHEN u.error->>'kind' = 'timebox' THEN 'timed-out' ELSE 'lease-expired' END, u.attempts, u.worker,
             jsonb_strip_nulls(jsonb_build_object('error', u.error, 'startedAt', ${iso(sql `u.started_at`)},
               'retryAt', CASE WHEN u.state = 'queued' THEN ${iso(sql `u.run_at`)} END))
      FROM upd u
    ),
    notify AS (SELECT pg_notify(${JOBS_CHANNEL}, '') FROM upd WHERE state = 'queued' LIMIT 1)
    SELECT u.*, (SELECT count(*) FROM notify) AS notified FROM upd u`.execute(db.kysely);
    return rows.map(jobFromRow);
}
//# sourceMappingURL=reap.js.map