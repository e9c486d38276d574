/**
 * (j) Growth: jobclock on a job table holding a long history of final jobs (BENCH_HISTORY, default
 * 10 million; built from SQL by Templates.jobclockHistory). The README loop on it against the same
 * loop on an empty table, and what an operator's reads cost there: the first page of GET /jobs for
 * each filter, GET /types, GET /groups and a /metrics scrape, each asked one at a time.
 */
import {} from '../lib/context.js';
import { HttpClient, unexpected } from '../lib/http.js';
import { latencySummary } from '../lib/stats.js';
import { tokenOf } from '../lib/tokens.js';
import { jobclockProcessing, lease } from './worker-protocol.js';
export const historyJobs = (ctx) => Math.max(100_000, Math.round(Number(process.env.BENCH_HISTORY ?? 10_000_000) * Math.min(1, ctx.scale)));
/** The growth rows' queue and timed window: long enough to hold autovacuum runs and periodic submissions. */
export const GROWTH_STEADY = {
    queue: (ctx) => Math.max(20_000, Math.round(400_000 * Math.min(1, ctx.scale))),
    timeboxMs: (ctx) => Math.max(4_000, Math.round(20_000 * Math.min(1, ctx.scale))),
};
/** The README loop on an empty table with the growth rows' queue and window: what j.loop is held against. */
export const growthBase = jobclockProcessing('j.base', 'reports', { types: ['noop'], wait: '30s' }, { steady: GROWTH_STEADY });
/** The README loop behind the history and 100,000 periodic tasks coming due (some 170 a second). */
export const growthLoop = {
    ...jobclockProcessing('j.loop', 'reports', { types: ['noop'], wait: '30s' }, { history: historyJobs, steady: GROWTH_STEADY }),
    guardMs: () => 1_800_000, // the first of the rows that need it builds the history
};
/** j.loop without its periodic submissions: what the history alone costs the loop. */
export const growthHistoryOnly = {
    ...jobclockProcessing('j.hist', 'reports', { types: ['noop'], wait: '30s' }, { history: historyJobs, tasksIdle: true, steady: GROWTH_STEADY }),
    guardMs: () => 1_800_000,
};
/** The README loop held to 2,000 jobs a second, on an empty table: the latency the paced row is held against. */
export const growthPacedBase = jobclockProcessing('j.pbase', 'reports', { types: ['noop'], wait: '30s' }, { steady: { ...GROWTH_STEADY, pacePerSec: 2_000 } });
/** The README loop held to 2,000 jobs a second behind the history and the periodic tasks: lease latency and lateness there. */
export const growthPaced = {
    ...jobclockProcessing('j.paced', 'reports', { types: ['noop'], wait: '30s' }, { history: historyJobs, steady: { ...GROWTH_STEADY, pacePerSec: 2_000 } }),
    guardMs: () => 1_800_000,
};
export const expiredJobs = (ctx) => Math.max(100_000, Math.round(Number(process.env.BENCH_EXPIRED ?? 1_000_000) * Math.min(1, ctx.scale)));
/** The README loop while the RetentionCleaner deletes BENCH_EXPIRED (default 1 million) expired jobs. */
export const growthRetention = {
    ...jobclockProcessing('j.retention', 'reports', { types: ['noop'], wait: '30s' }, { expired: expiredJobs, steady: GROWTH_STEADY }),
    guardMs: () => 900_000,
};
/** The reads: name → path. The history's customers are c-0 … c-99999, each in 1 of 100,000 jobs' args. */
export const GROWTH_READS = [
    ['type', '/jobs?type=hist-7&limit=50'],
    ['type (1 in 100,000)', '/jobs?type=hist-rare&limit=50'],
    ['state (1 %)', '/jobs?state=failed&limit=50'],
    ['type + state', '/jobs?type=hist-0&state=failed&limit=50'],
    ['type + state, no match', '/jobs?type=hist-7&state=failed&limit=50'],
    ['group', '/jobs?group=customer:42&limit=50'],
    ['worker', '/jobs?worker=w-7&limit=50'],
    ['argsContains', `/jobs?argsContains=${encodeURIComponent('{"customer":"c-4242"}')}&limit=50`],
    ['q (text)', `/jobs?q=${encodeURIComponent('c-4242')}&limit=50`],
    ['GET /types', '/types'],
    ['GET /groups', '/groups?limit=100'],
    ['GET /metrics', '/metrics'],
];
export const growthReads = {
    key: 'j.reads',
    guardMs: () => 900_000,
    async run(ctx) {
        const db = await ctx.server.createDatabase(await ctx.templates.jobclockHistory(historyJobs(ctx), GROWTH_STEADY.queue(ctx)));
        const client = { http: null };
        try {
            const base = await ctx.host.open({ url: db.url, schedulerLoop: true });
            await db.settle();
            client.http = new HttpClient(base, tokenOf('admin'), 1);
            const extra = { history: historyJobs(ctx) };
            const asks = Math.max(5, Math.round(20 / ctx.rounds));
            for (const [i, [, path]] of GROWTH_READS.entries()) {
                const ms = [];
                for (let k = 0; k < asks + 2; k++) {
                    const t = performance.now();
                    const res = await client.http.request('GET', path);
                    const took = performance.now() - t;
                    if (res.status !== 200)
                        throw unexpected(`GET ${path}`, res);
                    if (k >= 2)
                        ms.push(took); // the first two warm the plan cache and the pages
                }
                const s = latencySummary(ms);
                extra[`p50.${i}`] = s.p50;
                extra[`p99.${i}`] = s.p99;
            }
            return { value: extra['p50.0'], extra };
        }
        finally {
            client.http?.close();
            await ctx.host.close().catch(() => undefined);
            await db.retire();
        }
    },
};
export const churnJobs = (ctx) => Math.max(50_000, Math.round(Number(process.env.BENCH_CHURN ?? 1_000_000) * Math.min(1, ctx.scale)));
/** The indexes every lease or report touches, whose size after the churn is reported. */
export const HOT_INDEXES = [
    'job_pkey',
    'job_fair_idx',
    'job_fair_type_idx',
    'job_queued_run_at_idx',
    'job_queued_id_idx',
    'job_lease_expiry_idx',
    'job_finished_idx',
];
/**
 * BENCH_CHURN (default 1 million) jobs through the README loop while one producer keeps about
 * 20,000 queued (POST /jobs/batch of 1,000): the lease's latency over the run, and the size of the
 * hot indexes afterwards against their size rebuilt, with what autovacuum did meanwhile.
 */
export const growthChurn = {
    key: 'j.churn',
    guardMs: () => 1_800_000,
    async run(ctx) {
        const db = await ctx.server.createDatabase(await ctx.templates.jobclock());
        const clients = [];
        try {
            const base = await ctx.host.open({ url: db.url, schedulerLoop: true });
            const total = churnJobs(ctx);
            const producer = new HttpClient(base, tokenOf('producer'), 1);
            const workers = new HttpClient(base, tokenOf('worker'), 4);
            clients.push(producer, workers);
            let produced = 0;
            let finished = 0;
            const leaseMs = [];
            const started = performance.now();
            const produce = (async () => {
                while (produced < total) {
                    if (produced - finished >= 20_000) {
                        await new Promise((resolve) => setTimeout(resolve, 2));
                        continue;
                    }
                    const n = Math.min(1000, total - produced);
                    const res = await producer.post('/jobs/batch', { jobs: Array.from({ length: n }, () => ({ type: 'noop' })) });
                    if (res.status !== 201)
                        throw unexpected('POST /jobs/batch', res);
                    produced += n;
                }
            })();
            const work = Array.from({ length: 4 }, async (_, i) => {
                while (finished < total) {
                    const t = performance.now();
                    const jobs = await lease(workers, `churn-${i}`, 100, { types: ['noop'] });
                    if (jobs.length === 0) {
                        await new Promise((resolve) => setTimeout(resolve, 1)); // the producer is behind
                        continue;
                    }
                    leaseMs.push(performance.now() - t); // leases that found jobs: the statement, not a wait
                    const res = await workers.post('/jobs/reports', {
                        reports: jobs.map((j) => ({ id: j.id, leaseToken: j.leaseToken, outcome: 'finished' })),
                    });
                    if (res.status !== 200)
                        throw unexpected('POST /jobs/reports', res);
                    finished += jobs.length;
                }
            });
            await Promise.all([produce, ...work]);
            const seconds = (performance.now() - started) / 1000;
            const sizes = async () => {
                const { rows } = await db.exec(`select relname as name, pg_relation_size(oid) as bytes from pg_class where relname = any($1)`, [
                    HOT_INDEXES,
                ]);
                return Object.fromEntries(rows.map((r) => [r.name, Number(r.bytes)]));
            };
            const after = await sizes();
            const { rows: stat } = await db.exec(`select autovacuum_count::int as vacuums, autoanalyze_count::int as analyzes, n_dead_tup::int as dead from pg_stat_user_tables where relname = 'job'`);
            await db.exec(`reindex table job`);
            const rebuilt = await sizes();
            const s = latencySummary(leaseMs);
            const extra = {
                jobs: finished,
                perSec: finished / seconds,
                leaseP50: s.p50,
                leaseP99: s.p99,
                ...stat[0],
            };
            for (const name of HOT_INDEXES) {
                extra[`mb.${name}`] = (after[name] ?? 0) / 2 ** 20;
                extra[`mbRebuilt.${name}`] = (rebuilt[name] ?? 0) / 2 ** 20;
            }
            return { value: finished / seconds, extra };
        }
        finally {
            for (const c of clients)
                c.close();
            await ctx.host.close().catch(() => undefined);
            await db.retire();
        }
    },
};
//# sourceMappingURL=growth.js.map