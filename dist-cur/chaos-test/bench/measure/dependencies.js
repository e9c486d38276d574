/**
 * (m) jobs that wait for other jobs: how soon a join runs after the last of 10,000 page jobs it
 * waits for, and how long each link of a chain of 1,000 takes against 1,000 jobs without
 * dependencies worked the same way.
 */
import { scaled, sleep } from '../lib/context.js';
import { HttpClient, unexpected } from '../lib/http.js';
import { latencySummary } from '../lib/stats.js';
import { tokenOf } from '../lib/tokens.js';
const FAN_IN = (ctx) => scaled(ctx, 10_000, 1_000);
const CHAIN = (ctx) => scaled(ctx, 1_000, 100);
const WORKERS = 4;
async function leased(c, body) {
    const res = await c.post('/jobs/next', body);
    if (res.status === 204)
        return [];
    if (res.status !== 200)
        throw unexpected('POST /jobs/next', res);
    return res.body.jobs;
}
/** Creates `n` jobs of `type` with POST /jobs/batch (1000 at a time); returns their ids. */
async function createPages(c, type, n) {
    const ids = [];
    for (let i = 0; i < n; i += 1000) {
        const jobs = Array.from({ length: Math.min(1000, n - i) }, (_, k) => ({ type, args: { page: i + k } }));
        const res = await c.post('/jobs/batch', { jobs });
        if (res.status !== 201)
            throw unexpected('POST /jobs/batch', res);
        ids.push(...res.body.jobs.map((j) => j.id));
    }
    return ids;
}
/**
 * A join after 10,000 page jobs: 4 workers run the pages with the README loop (lease 100, report
 * 100), and a fifth waits for the join in a long-poll. The value is the time from the answer to the
 * report that finished the last page to the join's lease in that long-poll. The pages' rate is in
 * `extra`, beside the same loop's rate on pages nobody waits for, for what the edges cost the reports.
 */
export const fanInJoin = {
    key: 'm.fanin',
    guardMs: () => 180_000,
    async run(ctx) {
        const db = await ctx.server.createDatabase(await ctx.templates.jobclock());
        let client = null;
        try {
            const base = await ctx.host.open({ url: db.url, schedulerLoop: true });
            await db.settle();
            const c = new HttpClient(base, tokenOf('admin'), WORKERS + 2);
            client = c;
            const n = FAN_IN(ctx);
            // the same loop on pages nobody waits for first (a reference within the run), then the fan-in
            const loop = async (type) => {
                let done = 0;
                let lastReportAt = 0;
                const t0 = performance.now();
                await Promise.all(Array.from({ length: WORKERS }, async (_, w) => {
                    while (done < n) {
                        const jobs = await leased(c, { worker: `page-${w}`, types: [type], limit: 100, wait: '1s' });
                        if (jobs.length === 0)
                            continue;
                        const reports = jobs.map((j) => ({ id: j.id, leaseToken: j.leaseToken, outcome: 'finished', result: { url: `p/${j.id}` } }));
                        const res = await c.post('/jobs/reports', { reports });
                        if (res.status !== 200)
                            throw unexpected('POST /jobs/reports', res);
                        done += jobs.length;
                        lastReportAt = performance.now();
                    }
                }));
                return { rate: (n * 1000) / (lastReportAt - t0), lastReportAt };
            };
            await createPages(c, 'plain-page', n);
            const plain = await loop('plain-page');
            const pages = await createPages(c, 'page', n);
            const join = await c.post('/jobs', { type: 'join', after: pages });
            if (join.status !== 201)
                throw unexpected('POST /jobs (after 10,000)', join);
            let joinAt = 0;
            const waiter = leased(c, { worker: 'joiner', types: ['join'], wait: '60s' }).then((jobs) => {
                joinAt = performance.now();
                if (jobs.length !== 1 || (jobs[0].dependencies ?? []).length !== n)
                    throw new Error('the join came without its 10,000 dependencies');
                return jobs;
            });
            await sleep(50); // the long-poll is parked
            const fan = await loop('page');
            await waiter;
            const delay = joinAt - fan.lastReportAt;
            // the same delay by the database's clock: the join's start after the last page's end (the
            // HTTP figure includes sending the join's 10,000 dependencies with their results)
            const { rows } = await db.exec(`SELECT extract(epoch FROM (SELECT started_at FROM job WHERE type = 'join') - (SELECT max(finished_at) FROM job WHERE type = 'page')) * 1000 AS ms`);
            const dbMs = Number(rows[0].ms);
            return {
                value: delay,
                samples: [delay],
                extra: { dbMs, pagesPerSec: fan.rate, plainPagesPerSec: plain.rate, ratio: fan.rate / plain.rate },
            };
        }
        finally {
            client?.close();
            await ctx.host.close().catch(() => undefined);
            await db.retire();
        }
    },
};
/**
 * One worker through a chain of 1,000 jobs (one batch, each after the one before): lease with a
 * long-poll, report finished, lease the next. The samples are the times from one lease to the
 * next (a link); `plain` works 1,000 jobs without dependencies the same way, the reference.
 */
function chainUnit(key, chained) {
    return {
        key,
        guardMs: () => 120_000,
        async run(ctx) {
            const db = await ctx.server.createDatabase(await ctx.templates.jobclock());
            let client = null;
            try {
                const base = await ctx.host.open({ url: db.url, schedulerLoop: true });
                await db.settle();
                const c = new HttpClient(base, tokenOf('admin'), 2);
                client = c;
                const n = CHAIN(ctx);
                const jobs = Array.from({ length: n }, (_, i) => ({
                    type: 'link',
                    ...(chained ? { ref: `l${i}`, after: i > 0 ? [`l${i - 1}`] : [] } : {}),
                }));
                for (let i = 0; i < n; i += 1000) {
                    const res = await c.post('/jobs/batch', { jobs: jobs.slice(i, i + 1000) });
                    if (res.status !== 201)
                        throw unexpected('POST /jobs/batch', res);
                }
                const samples = [];
                let last = performance.now();
                for (let i = 0; i < n; i++) {
                    const [job] = await leased(c, { worker: 'chain', types: ['link'], wait: '30s' });
                    if (!job)
                        throw new Error(`link ${i}: the long-poll answered 204`);
                    const now = performance.now();
                    if (i > 0)
                        samples.push(now - last);
                    last = now;
                    const res = await c.post(`/jobs/${job.id}/finished`, { leaseToken: job.leaseToken });
                    if (res.status !== 200)
                        throw unexpected('POST /jobs/{id}/finished', res);
                }
                const s = latencySummary(samples);
                return { value: s.p50, samples, extra: { ...s } };
            }
            finally {
                client?.close();
                await ctx.host.close().catch(() => undefined);
                await db.retire();
            }
        },
    };
}
export const chainLinks = chainUnit('m.chain', true);
export const chainPlain = chainUnit('m.chainplain', false);
//# sourceMappingURL=dependencies.js.map