import { sql } from 'kysely';
import { DEFAULT_LEASE_MS } from '../../domain/job.js';
import { compiledOnce } from './compile.js';
import { isJobId } from './row.js';
import { ms, withinGrace } from './sql.js';
/**
 * Compare-and-set on id + lease token + state running (or cancelled while running: the worker must
 * still learn that it should stop) and not past deadline + grace: extends the lease, records
 * progress, saves the task's state (a one-shot job's checkpoint). A cancelled job's lease is not extended.
 */
export async function jobHeartbeat(db, p) {
    if (!isJobId(p.id))
        return { outcome: 'not_found' };
    const toJson = (value) => (value === undefined || value === null ? null : JSON.stringify(value));
    const newLease = p.leaseMs !== undefined;
    const newProgress = p.progress !== undefined;
    const values = {
        id: p.id,
        token: p.leaseToken,
        now: p.now,
        leaseMs: p.leaseMs ?? null,
        progress: toJson(p.progress),
        saveState: p.state !== undefined,
        state: toJson(p.state),
    };
    const shape = `heartbeat${newLease ? '+lease' : ''}${newProgress ? '+progress' : ''}`;
    const rows = await compiledOnce(db, shape, values, (v) => {
        const now = sql `${v.now}::timestamptz`;
        const lease = newLease ? sql `${v.leaseMs}::bigint` : sql `coalesce(j.lease_duration, ${DEFAULT_LEASE_MS})`;
        return sql `
    WITH hb AS (
      UPDATE job j SET
        lease_expires_at = CASE WHEN j.state = 'running' THEN ${now} + ${ms(lease)} ELSE j.lease_expires_at END,
        progress = ${newProgress ? sql `${v.progress}::jsonb` : sql `j.progress`},
        checkpoint = CASE WHEN ${v.saveState}::boolean AND j.periodic_task_id IS NULL THEN ${v.state}::jsonb ELSE j.checkpoint END,
        updated_at = ${now}
      WHERE j.id = ${v.id}::bigint AND j.lease_token = ${v.token}::uuid AND j.state IN ('running', 'cancelled')
        AND ${withinGrace('j', v.now)}
      RETURNING j.id, j.state, j.lease_expires_at, j.deadline, j.periodic_task_id
    ),
    saved AS (
      UPDATE periodic_task t SET state = ${v.state}::jsonb
      FROM hb WHERE ${v.saveState}::boolean AND t.id = hb.periodic_task_id
      RETURNING t.id
    )
    SELECT hb.id IS NOT NULL AS ok, hb.state, hb.lease_expires_at, hb.deadline, hb.periodic_task_id,
           cur.state AS cur_state, cur.lease_token = ${v.token}::uuid AS token_matches,
           (SELECT count(*) FROM saved) AS saved
    FROM (SELECT 1) one
    LEFT JOIN hb ON true
    LEFT JOIN job cur ON cur.id = ${v.id}::bigint`;
    });
    const r = rows[0];
    if (r.ok) {
        return { outcome: 'ok', state: r.state, leaseExpiresAt: r.lease_expires_at, deadline: r.deadline, periodicTaskId: r.periodic_task_id };
    }
    if (r.cur_state === null)
        return { outcome: 'not_found' };
    return { outcome: 'lease_lost', state: r.cur_state, tokenMatches: r.token_matches === true };
}
//# sourceMappingURL=heartbeat.js.map