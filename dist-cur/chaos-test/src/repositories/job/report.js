import { sql } from 'kysely';
import { BACKOFF_BASE_MS, BACKOFF_MAX_MS } from '../../domain/job.js';
import { compiledOnce } from './compile.js';
import { isJobId, JOB_COLUMNS, jobCols, jobFromRow } from './row.js';
import { iso, JOBS_CHANNEL, ms, withinGrace } from './sql.js';
/**
 * Applies many finished/failed reports in ONE statement (UPDATE ... FROM unnest of one array per field), each
 * a compare-and-set on id + lease token + state running, not past deadline + grace:
 * - finished: state finished, result saved;
 * - failed with attempts left and not `final`: queued again at now + retryIn, or now + the backoff
 *   (domain/job.ts retryDelayMs, evaluated here per row); else failed;
 * - on a job cancelled while it ran (its token kept): accepted, the job stays cancelled.
 * `state`, when given, is saved on the periodic task, or for a one-shot job as its checkpoint. The lease token is kept on the row, so a
 * repeated report with the same token is recognised and answered as a repeat, with the job as it is.
 * Returns one result per input, in input order, with its verdict (see ReportVerdict); with
 * `jobs: false` the results carry no job (cheaper: no full rows are returned).
 */
export async function jobReport(db, reports, now, opts = {}) {
    const withJobs = opts.jobs ?? true;
    if (reports.length === 0)
        return [];
    // the reports as one array per field (array input is parsed at about half the cost of the same
    // reports as JSON records)
    const input = {
        ord: [],
        id: [],
        token: [],
        outcome: [],
        result: [],
        error: [],
        retryIn: [],
        final: [],
        hasState: [],
        state: [],
        jitter: [],
    };
    const json = (v) => (v === undefined || v === null ? null : JSON.stringify(v));
    reports.forEach((r, ord) => {
        if (!isJobId(r.id))
            return; // names no job: stays not-found
        input.ord.push(ord);
        input.id.push(r.id);
        input.token.push(r.leaseToken);
        input.outcome.push(r.outcome);
        input.result.push(json(r.result));
        input.error.push(json(r.error));
        input.retryIn.push(r.retryInMs ?? null);
        input.final.push(r.final === true);
        input.hasState.push(r.state !== undefined);
        input.state.push(json(r.state));
        input.jitter.push(r.jitter);
    });
    const results = reports.map((r) => ({
        id: r.id,
        verdict: 'not-found',
        job: null,
        currentState: null,
        tokenMatches: false,
        type: null,
        taskId: null,
        attempts: null,
    }));
    if (input.id.length === 0)
        return results;
    const values = { ...input, now };
    // Batches of plain `finished` reports (the README loop's, and most combined single reports) get
    // a statement of their own: no failure, requeue or saved state can come of them, so it takes 4
    // arrays instead of 11 and leaves out the job_event insert, the periodic_task update and the
    // requeue notification — fewer plan nodes and result relations for PostgreSQL to set up on every
    // execution (a one-job report spent a fifth of its time in executor start-up).
    const onlyFinished = input.outcome.every((o) => o === 'finished') && !input.hasState.some((h) => h);
    const shape = `report${onlyFinished ? '-finished' : ''}${withJobs ? '+jobs' : ''}`;
    const rows = await compiledOnce(db, shape, values, (v) => {
        const n = sql `${v.now}::timestamptz`;
        const requeue = sql `(j.state = 'running' AND i.outcome = 'failed' AND j.attempts < j.max_attempts AND NOT i.final)`;
        // Without jobs in the answer, only what the statuses, the logs and the side effects need comes
        // back: no 29-column rows to send, parse and turn into jobs (most of a batch report's cost).
        const pick = withJobs
            ? sql.join(JOB_COLUMNS.map((c) => sql `CASE WHEN u.id IS NOT NULL THEN ${sql.ref(`u.${c}`)} ELSE ${sql.ref(`j.${c}`)} END AS ${sql.ref(c)}`))
            : sql `coalesce(u.periodic_task_id, j.periodic_task_id) AS periodic_task_id, coalesce(u.attempts, j.attempts) AS attempts,
            coalesce(u.type, j.type) AS type`;
        const returning = withJobs
            ? jobCols('j')
            : sql `j.id, j.type, j.state, j.periodic_task_id, j.attempts, j.run_at, j.worker, j.started_at, j.error`;
        const accepted = (a) => sql `(${sql.ref(`${a}.state`)} = 'cancelled' OR (i.outcome = 'finished' AND ${sql.ref(`${a}.state`)} = 'finished')
           OR (i.outcome = 'failed' AND ${sql.ref(`${a}.state`)} IN ('queued', 'failed')))`;
        const inputRows = onlyFinished
            ? sql `SELECT i.ord, i.id, i.token, 'finished'::text AS outcome, i.result, NULL::jsonb AS error, NULL::bigint AS retry_in,
                   false AS final, false AS has_state, NULL::jsonb AS task_state, 1::float8 AS jitter
            FROM unnest(${v.ord}::int[], ${v.id}::bigint[], ${v.token}::uuid[], ${v.result}::jsonb[]) AS i(ord, id, token, result)`
            : sql `SELECT * FROM unnest(${v.ord}::int[], ${v.id}::bigint[], ${v.token}::uuid[], ${v.outcome}::text[], ${v.result}::jsonb[],
                           ${v.error}::jsonb[], ${v.retryIn}::bigint[], ${v.final}::boolean[], ${v.hasState}::boolean[],
                           ${v.state}::jsonb[], ${v.jitter}::float8[])
              AS i(ord, id, token, outcome, result, error, retry_in, final, has_state, task_state, jitter)`;
        // what only failures and saved state set off
        const failureEffects = sql `
    -- the history keeps what the row cannot: the end of an attempt that failed (a finished attempt
    -- is read from the row itself)
    failed_events AS (
      INSERT INTO job_event (job_id, at, kind, attempt, worker, detail)
      SELECT u.id, ${n}, CASE WHEN u.state = 'queued' THEN 'requeued' ELSE 'failed' END, u.attempts, u.worker,
             jsonb_strip_nulls(jsonb_build_object('error', u.error, 'startedAt', ${iso(sql `u.started_at`)},
               'retryAt', CASE WHEN u.state = 'queued' THEN ${iso(sql `u.run_at`)} END,
               'final', CASE WHEN u.used_final AND u.state = 'failed' THEN true END))
      FROM upd u WHERE u.used_outcome = 'failed' AND u.state IN ('queued', 'failed')
    ),
    saved AS (
      UPDATE periodic_task t SET state = s.task_state
      FROM (
        SELECT DISTINCT ON (u.periodic_task_id) u.periodic_task_id, u.used_task_state AS task_state
        FROM upd u WHERE u.used_has_state AND u.periodic_task_id IS NOT NULL
        ORDER BY u.periodic_task_id, u.used_ord DESC
      ) s
      WHERE t.id = s.periodic_task_id
      RETURNING t.id
    ),
    notify AS (
      SELECT pg_notify(${JOBS_CHANNEL}, (extract(epoch FROM min(u.run_at)) * 1000)::bigint::text)
      FROM upd u WHERE u.state = 'queued' HAVING count(*) > 0
    ),`;
        return sql `
    WITH input AS MATERIALIZED (
      ${inputRows}
    ),
    upd AS (
      UPDATE job j SET
        state = CASE WHEN j.state = 'cancelled' THEN 'cancelled'
                     WHEN i.outcome = 'finished' THEN 'finished'
                     WHEN j.attempts < j.max_attempts AND NOT i.final THEN 'queued'
                     ELSE 'failed' END,
        run_at = CASE WHEN ${requeue} THEN ${n} + ${ms(sql `coalesce(i.retry_in,
                   round(least(${BACKOFF_BASE_MS}::float8 * power(2::float8, least(greatest(j.attempts, 0), 31)), ${BACKOFF_MAX_MS}::float8) * i.jitter)::bigint)`)}
                 ELSE j.run_at END,
        finished_at = CASE WHEN j.state = 'cancelled' THEN j.finished_at WHEN ${requeue} THEN NULL ELSE ${n} END,
        result = CASE WHEN j.state = 'running' AND i.outcome = 'finished' THEN i.result ELSE j.result END,
        error = CASE WHEN j.state = 'running' AND i.outcome = 'failed' THEN i.error ELSE j.error END,
        -- a one-shot job's state is its checkpoint, handed to its next attempt (a periodic task's
        -- goes to the task, below)
        checkpoint = CASE WHEN j.state = 'running' AND i.has_state AND j.periodic_task_id IS NULL THEN i.task_state ELSE j.checkpoint END,
        lease_expires_at = NULL,
        deadline = CASE WHEN ${requeue} THEN NULL ELSE j.deadline END,
        -- the slots it held are released below, for the whole batch at once (the row trigger of
        -- migration 0007 stands aside when a statement clears holds_slot itself)
        holds_slot = false,
        updated_at = ${n}
      -- several reports of one job in a batch (a worker repeating itself, or a stale and a current
      -- holder whose requests were combined): of those carrying the job's token, the first applies.
      -- An UPDATE changes a row once, and which joined input row it took would be up to the plan;
      -- keeping the first per job and token leaves one row that can match. The others are answered
      -- below, as repeats of it or as stale
      FROM (SELECT DISTINCT ON (id, token) * FROM input ORDER BY id, token, ord) i
      -- the ids also as an array: the jobs are then found by primary key whatever the planner
      -- believes of the table's size (a generic plan made before its first ANALYZE chose a
      -- sequential scan and a hash join over it)
      WHERE j.id = ANY (ARRAY(SELECT id FROM input)) AND j.id = i.id AND j.lease_token = i.token
        AND j.state IN ('running', 'cancelled') AND ${withinGrace('j', v.now)}
      RETURNING ${returning}, i.token AS used_token, i.has_state AS used_has_state, i.task_state AS used_task_state, i.ord AS used_ord,
                i.outcome AS used_outcome, i.final AS used_final, j.group_default AS used_group_default
    ),
    ${onlyFinished ? sql `` : failureEffects}
    -- flow control: the slots of the jobs that stopped running are free again, and so are the
    -- places of those begun under the groups default (they no longer count as running); waiting
    -- workers are woken. Through flow_slot_job_idx whatever the table's statistics say (migration 0029:
    -- the free permits of groups nobody declared stay a minute, and a plan made while the table
    -- was empty scanned them all); without a held slot anywhere, one probe of an empty index.
    released AS MATERIALIZED (
      SELECT jobclock_release_permits(ARRAY(SELECT u.id FROM upd u), ${n}) AS k
    ),
    slot_notify AS (
      SELECT pg_notify(${JOBS_CHANNEL}, '') FROM released WHERE k > 0 OR EXISTS (SELECT 1 FROM upd u WHERE u.used_group_default)
    )
    SELECT i.ord,
           CASE WHEN u.id IS NOT NULL THEN
                  CASE WHEN u.used_token = i.token AND ${accepted('u')} THEN
                         CASE WHEN u.used_ord = i.ord THEN 'applied' ELSE 'repeat' END
                       ELSE 'lease-lost' END
                WHEN j.id IS NULL THEN 'not-found'
                WHEN j.lease_token = i.token AND ${accepted('j')} THEN 'repeat'
                ELSE 'lease-lost' END AS verdict,
           coalesce(u.state, j.state) AS cur_state,
           coalesce(u.used_token, j.lease_token) = i.token AS token_matches,
           ${onlyFinished ? sql `` : sql `(SELECT count(*) FROM notify) + (SELECT count(*) FROM saved) +`} (SELECT count(*) FROM slot_notify) AS side_effects,
           ${pick}
    FROM input i
    LEFT JOIN upd u ON u.id = i.id
    -- the job as it is, only for reports that changed nothing: the condition on u gates the lookup
    -- (OFFSET 0 keeps the planner from folding it into a join filter checked after the lookup)
    LEFT JOIN LATERAL (SELECT * FROM job WHERE job.id = i.id AND u.id IS NULL OFFSET 0) j ON true
    ORDER BY i.ord`;
    });
    for (const r of rows) {
        const res = results[r.ord];
        res.verdict = r.verdict;
        res.currentState = r.cur_state;
        res.tokenMatches = r.token_matches === true;
        res.type = r.type ?? null;
        res.taskId = r.periodic_task_id ?? null;
        res.attempts = r.attempts ?? null;
        res.job = withJobs && (r.verdict === 'applied' || r.verdict === 'repeat') ? jobFromRow(r) : null;
    }
    return results;
}
//# sourceMappingURL=report.js.map