import { createDb } from '../../src/db/database.js';
import { jobLease } from '../../src/repositories/jobs.js';
import { timedRate, warmThenTime } from '../lib/context.js';
import { FINISH_MANY, processingJobs, processingTimeboxMs } from './worker-protocol.js';
/** The proposed claim for candidates of no periodic task: one CTE to claim, one UPDATE, no task machinery. */
export const SLIM_LEASE = `
  WITH slots AS MATERIALIZED (
    SELECT * FROM jsonb_to_recordset($1::jsonb) AS s(n int, worker text, lease bigint)
  ),
  candidates AS MATERIALIZED (
    SELECT id, priority, run_at FROM job
     WHERE state = 'queued' AND run_at < $2::timestamptz + interval '1 millisecond'
     ORDER BY priority DESC, run_at, id
     LIMIT $3
     FOR UPDATE SKIP LOCKED
  ),
  assigned AS MATERIALIZED (
    SELECT c.id, s.n AS slot, s.worker, s.lease
      FROM (SELECT id, row_number() OVER (ORDER BY priority DESC, run_at, id) AS n FROM candidates) c
      JOIN slots s ON s.n = c.n
  )
  UPDATE job j SET
    state = 'running', worker = d.worker, attempts = j.attempts + 1, lease_token = gen_random_uuid(),
    lease_expires_at = $2::timestamptz + d.lease * interval '1 millisecond', lease_duration = d.lease,
    started_at = $2::timestamptz,
    deadline = CASE WHEN j.timebox IS NULL THEN NULL ELSE $2::timestamptz + j.timebox * interval '1 millisecond' END,
    finished_at = NULL, progress = NULL, updated_at = $2::timestamptz
  FROM assigned d
  WHERE j.id = d.id
    -- the rows by primary key, whatever the generic plan estimates LIMIT $3 to return (10 % of
    -- the queued jobs: with 300,000 queued, a hash join over a sequential scan of the table)
    AND j.id = ANY (ARRAY(SELECT id FROM assigned))
  RETURNING j.*, NULL::jsonb AS task_state, d.slot, false AS dropped`;
const CONNECTIONS = 4;
const PER_STATEMENT = 100;
const warmupJobs = (ctx) => Math.round(processingJobs(ctx) / 10);
function slotsJson(worker) {
    return JSON.stringify(Array.from({ length: PER_STATEMENT }, (_, i) => ({ n: i + 1, worker, lease: 30_000 })));
}
function leaseLoop(key, how) {
    return {
        key,
        guardMs: (ctx) => processingTimeboxMs(ctx) + 60_000,
        async run(ctx) {
            const fresh = await ctx.server.createDatabase(await ctx.templates.jobclockJobs());
            // A pool of CONNECTIONS + 1 splits into CONNECTIONS generic-plan connections for the protocol.
            let db = null;
            const finishers = [];
            try {
                const n = ctx.templates.jobs;
                await fresh.settle();
                const d = createDb({ url: fresh.url, poolSize: CONNECTIONS + 2, applicationName: 'bench-lease' });
                db = d;
                // Finished exactly as a.raw100 finishes (its own connections, planned per call), so
                // that the rows differ only in the claim.
                for (let i = 0; i < CONNECTIONS; i++)
                    finishers.push(await fresh.client('bench-finish'));
                const slots = Array.from({ length: PER_STATEMENT }, () => ({ worker: 'bench-lease', leaseMs: 30_000 }));
                const t = await warmThenTime(ctx, processingTimeboxMs(ctx), async (until) => {
                    let done = 0;
                    await Promise.all(Array.from({ length: CONNECTIONS }, async (_, i) => {
                        const json = slotsJson(`bench-lease-${i}`);
                        while (performance.now() < until.deadline && done < until.jobs) {
                            let ids;
                            let tokens;
                            if (how === 'jobclock') {
                                const r = await jobLease(d, { now: new Date(), slots });
                                ids = r.leased.map((j) => j.id);
                                tokens = r.leased.map((j) => j.leaseToken);
                            }
                            else {
                                const r = await d.protocol.query({
                                    name: 'bench_slim_lease',
                                    text: SLIM_LEASE,
                                    values: [json, new Date(), PER_STATEMENT],
                                });
                                ids = r.rows.map((j) => String(j.id));
                                tokens = r.rows.map((j) => j.lease_token);
                            }
                            if (ids.length === 0)
                                return;
                            const res = await finishers[i].query(FINISH_MANY, [ids, tokens]);
                            done += res.rowCount ?? 0;
                        }
                    }));
                    return done;
                }, warmupJobs(ctx));
                if (process.env.BENCH_STATEMENTS)
                    ctx.log(`${key}: top statements\n${await fresh.topStatements()}`);
                return timedRate(t, n);
            }
            finally {
                await Promise.all(finishers.map((c) => c.end().catch(() => undefined)));
                await db?.destroy();
                await fresh.retire();
            }
        },
    };
}
export const jobclockLease100 = leaseLoop('a.lease100', 'jobclock');
export const slimLease100 = leaseLoop('a.slim100', 'slim');
//# sourceMappingURL=lease-statement.js.map