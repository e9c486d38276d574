import { sql } from 'kysely';
import { iso } from './sql.js';
/** A queued job (of `job`) whose startBy has come at `now`; job_start_by_idx answers it. */
export const expiredCondition = (now) => sql `job.state = 'queued' AND job.start_by IS NOT NULL AND job.start_by <= ${now}::timestamptz`;
/**
 * Drops up to `limit` queued jobs whose startBy has come (reason expired): the tidy-up of jobs
 * nobody tried to lease, since the lease statement never hands such a job out and drops those it
 * meets itself. A compare-and-set on state queued; rows another statement holds are skipped.
 * Returns the ids dropped.
 */
export async function jobDropExpired(db, now, limit) {
    const n = sql `${now}::timestamptz`;
    const { rows } = await sql `
    WITH due AS (
      SELECT id FROM job
      WHERE ${expiredCondition(now)}
      ORDER BY start_by
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    ),
    upd AS (
      UPDATE job j SET
        state = 'dropped',
        finished_at = ${n},
        lease_token = NULL,
        updated_at = ${n},
        error = jsonb_build_object('kind', 'dropped', 'reason', 'expired',
          'message', 'not leased by its startBy ' || ${iso(sql `j.start_by`)},
          'startBy', ${iso(sql `j.start_by`)}, 'at', ${iso(n)})
      FROM due WHERE j.id = due.id AND j.state = 'queued'
      RETURNING j.id, j.error
    ),
    events AS (
      INSERT INTO job_event (job_id, at, kind, detail)
      SELECT u.id, ${n}, 'dropped', jsonb_build_object('error', u.error, 'reason', 'expired') FROM upd u
    )
    SELECT id::text AS id FROM upd`.execute(db.kysely);
    return rows.map((r) => r.id);
}
//# sourceMappingURL=drop-expired.js.map