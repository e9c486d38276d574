/**
 * (l) the run ledger: GET /periodic-tasks/{id}/runs?limit=100 of an every-minute task with a year of
 * finished jobs behind it (525,600 slots), one page at a time at random points of the year and at
 * its newest end: a page must cost the same wherever it is.
 */
import { scaled } from '../lib/context.js';
import { HttpClient, unexpected } from '../lib/http.js';
import { latencySummary } from '../lib/stats.js';
import { tokenOf } from '../lib/tokens.js';
const MIN = 60_000;
const YEAR_MINUTES = 525_600;
const pages = (ctx) => scaled(ctx, 400, 50);
export const ledgerPages = {
    key: 'l.ledger',
    guardMs: () => 300_000,
    async run(ctx) {
        const db = await ctx.server.createDatabase(await ctx.templates.jobclock());
        let client = null;
        try {
            const slots = scaled(ctx, YEAR_MINUTES, 10_000);
            const end = Math.floor(Date.now() / MIN) * MIN;
            const start = end - slots * MIN;
            await db.exec(`insert into periodic_task (id, task, timer, concurrency_policy, nextrun, created, updated)
         values ('minutely', 'bench', 'every 1m', 'allow', to_timestamp($2 / 1000.0), to_timestamp($1 / 1000.0), now())`, [start, end + MIN]);
            await db.exec(`insert into job (type, periodic_task_id, scheduled_at, run_at, state, attempts, max_attempts, started_at, finished_at, created_at, updated_at)
         select 'bench', 'minutely', s, s, 'finished', 1, 1, s, s + interval '1 second', s, s
           from generate_series(to_timestamp($1 / 1000.0) + interval '1 minute', to_timestamp($2 / 1000.0), interval '1 minute') s`, [start, end]);
            await db.settle();
            const base = await ctx.host.open({ url: db.url, schedulerLoop: false });
            const c = new HttpClient(base, tokenOf('admin'), 1);
            client = c;
            const page = async (to) => {
                const path = `/periodic-tasks/minutely/runs?limit=100${to === null ? '' : `&to=${new Date(to).toISOString()}`}`;
                const t0 = performance.now();
                const res = await c.request('GET', path);
                const ms = performance.now() - t0;
                if (res.status !== 200)
                    throw unexpected('GET /periodic-tasks/{id}/runs', res);
                if (res.body.items.length !== 100)
                    throw new Error(`${path} gave a short page`);
                return ms;
            };
            for (let i = 0; i < 20; i++)
                await page(null); // warm-up
            const samples = [];
            const newest = [];
            for (let i = 0; i < pages(ctx); i++) {
                samples.push(await page(start + (200 + Math.floor(Math.random() * (slots - 200))) * MIN));
                if (i % 4 === 0)
                    newest.push(await page(null));
            }
            const s = latencySummary(samples);
            const n = latencySummary(newest);
            return { value: s.p50, samples, extra: { ...s, slots, newestP50: n.p50, newestP99: n.p99 } };
        }
        finally {
            client?.close();
            await ctx.host.close().catch(() => undefined);
            await db.retire();
        }
    },
};
//# sourceMappingURL=ledger.js.map