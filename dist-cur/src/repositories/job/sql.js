import { sql } from 'kysely';
import { CHANNELS } from '../../db/notifications.js';
import { MIN_GRACE_MS } from '../../domain/job.js';
export const ms = (expr) => sql `(${expr}) * interval '1 millisecond'`;
/** 10 % of the timebox, at least 1 s — timeboxGraceMs in domain/job.ts, per row. */
export const graceSql = (alias) => ms(sql `greatest(${sql.ref(`${alias}.timebox`)} / 10, ${MIN_GRACE_MS})`);
/** The row is not past deadline + grace at `now` (reports inside the grace are accepted). */
export const withinGrace = (alias, now) => sql `(${sql.ref(`${alias}.deadline`)} IS NULL OR ${sql.ref(`${alias}.deadline`)} + ${graceSql(alias)} >= ${now}::timestamptz)`;
export const iso = (expr) => sql `to_char((${expr}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
export const OPEN = sql `('queued', 'running')`;
/** What cancel acts on: the open jobs and those waiting for dependencies. */
export const CANCELLABLE = sql `('waiting', 'queued', 'running')`;
export const JOBS_CHANNEL = sql.lit(CHANNELS.jobs);
/**
 * What cancelling does to a job row (`j`), for cancel and bulk cancel: a running job keeps its lease
 * token, so its worker's next heartbeat answers cancel: true and its report is accepted.
 */
export const cancelSet = (now) => sql `
  state = 'cancelled',
  lease_token = CASE WHEN j.state = 'running' THEN j.lease_token ELSE NULL END,
  lease_expires_at = NULL,
  finished_at = ${now},
  updated_at = ${now}`;
/** The history entry of a cancel, from the rows of `old` (id, state, attempts, worker) that `upd` changed. */
export const cancelEvents = (now, actor, detail) => sql `
  INSERT INTO job_event (job_id, at, kind, attempt, worker, actor, detail)
  SELECT old.id, ${now}, 'cancelled', CASE WHEN old.state = 'running' THEN old.attempts END,
         CASE WHEN old.state = 'running' THEN old.worker END, ${actor}, ${detail}
  FROM old JOIN upd u ON u.id = old.id`;
/** What retrying does to a job row: queued, runnable at `now`, attempts from 0, the last run's traces gone. */
export const retrySet = (now) => sql `
  state = 'queued', run_at = ${now}, attempts = 0, worker = NULL, lease_token = NULL, lease_expires_at = NULL,
  lease_duration = NULL, started_at = NULL, deadline = NULL, finished_at = NULL, progress = NULL, result = NULL,
  debounce_until = NULL, updated_at = ${now}`;
/** The history entry of a retry, from the rows of `old` (id, state, error) that `upd` changed. */
export const retryEvents = (now, actor, bulk) => sql `
  INSERT INTO job_event (job_id, at, kind, actor, detail)
  SELECT old.id, ${now}, 'retried', ${actor},
         jsonb_strip_nulls(jsonb_build_object('from', old.state, 'error', old.error, 'bulk', ${bulk ? sql `true` : sql `NULL::boolean`}))
  FROM old JOIN upd u ON u.id = old.id`;
//# sourceMappingURL=sql.js.map