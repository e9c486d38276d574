/**
 * (e) idle wake latency of a long-polling worker vs a raw LISTEN/NOTIFY loop, and
 * (f) what 50 idle long-polling workers cost the database.
 */
import { scaled, sleep } from '../lib/context.js';
import { HttpClient, unexpected } from '../lib/http.js';
import { latencySummary } from '../lib/stats.js';
import { tokenOf } from '../lib/tokens.js';
/** ~200 samples in all (scaled), spread over the rounds: percentiles are taken over the pool. */
const wakeSamples = (ctx) => Math.max(20, Math.ceil(scaled(ctx, 200, 30) / ctx.rounds));
/** Pause before each enqueue, so the worker is parked and the system idle: 10–20 ms, jittered. */
const gap = () => sleep(10 + Math.random() * 10);
/** The enqueue: a plain INSERT, which fires jobclock's NOTIFY trigger. The same for both sides. */
const ENQUEUE = `insert into job (type, args, run_at) values ('wake', '{}', now())`;
const CLAIM_ONE = `
  update job set state = 'running', attempts = attempts + 1, worker = 'raw', lease_token = gen_random_uuid(),
         lease_expires_at = now() + interval '30 seconds', started_at = now(), updated_at = now()
   where id in (select id from job where state = 'queued' and run_at <= now()
                 order by priority desc, run_at, id for update skip locked limit 1)
  returning id, lease_token`;
export const jobclockWake = {
    key: 'e.jobclock',
    guardMs: (ctx) => wakeSamples(ctx) * 200 + 30_000,
    async run(ctx) {
        const db = await ctx.server.createDatabase(await ctx.templates.jobclock());
        const producer = await db.client('bench-producer');
        let client = null;
        try {
            const base = await ctx.host.open({ url: db.url, schedulerLoop: true });
            await db.settle();
            const c = new HttpClient(base, tokenOf('worker'), 2);
            client = c;
            // Warm-up: connection, route and query plans, outside the samples.
            const warm = await c.post('/jobs/next', { worker: 'bench-wake', limit: 1 });
            if (warm.status !== 204 && warm.status !== 200)
                throw unexpected('POST /jobs/next', warm);
            const samples = [];
            for (let i = 0; i < wakeSamples(ctx); i++) {
                const poll = c.post('/jobs/next', { worker: 'bench-wake', limit: 1, wait: '30s' });
                poll.catch(() => undefined); // awaited below; this only keeps an early failure from going unhandled
                await gap();
                const t0 = performance.now();
                await producer.query(ENQUEUE);
                const res = await poll;
                const t1 = performance.now();
                if (res.status !== 200)
                    throw unexpected('POST /jobs/next (wait 30s)', res);
                const job = res.body.jobs[0];
                if (!job)
                    throw new Error('POST /jobs/next answered 200 without a job');
                samples.push(t1 - t0);
                const fin = await c.post(`/jobs/${encodeURIComponent(job.id)}/finished`, { leaseToken: job.leaseToken });
                if (fin.status !== 200)
                    throw unexpected('POST /jobs/{id}/finished', fin);
            }
            const s = latencySummary(samples);
            return { value: s.p50, samples, extra: { ...s } };
        }
        finally {
            client?.close();
            await producer.end();
            await ctx.host.close().catch(() => undefined);
            await db.retire();
        }
    },
};
/**
 * The floor: the same INSERT and trigger on the same schema; a LISTEN connection receives the
 * notification and claims the job with the same one-statement SKIP LOCKED claim. No HTTP.
 */
export const rawWake = {
    key: 'e.raw',
    guardMs: (ctx) => wakeSamples(ctx) * 200 + 30_000,
    async run(ctx) {
        const db = await ctx.server.createDatabase(await ctx.templates.jobclock());
        const producer = await db.client('bench-producer');
        const listener = await db.client('bench-listener');
        const worker = await db.client('bench-worker');
        try {
            await listener.query('listen jobclock_jobs');
            let wake = null;
            listener.on('notification', () => {
                const w = wake;
                wake = null;
                w?.();
            });
            await worker.query(CLAIM_ONE); // warm-up: plan and connection
            await db.settle();
            const samples = [];
            for (let i = 0; i < wakeSamples(ctx); i++) {
                const claimed = new Promise((resolve, reject) => {
                    wake = () => {
                        worker.query(CLAIM_ONE).then((r) => resolve(r.rowCount ?? 0), reject);
                    };
                });
                await gap();
                const t0 = performance.now();
                await producer.query(ENQUEUE);
                const got = await claimed;
                const t1 = performance.now();
                if (got !== 1)
                    throw new Error(`raw wake: claimed ${got} jobs`);
                samples.push(t1 - t0);
            }
            const s = latencySummary(samples);
            return { value: s.p50, samples, extra: { ...s } };
        }
        finally {
            await Promise.all([producer, listener, worker].map((c) => c.end().catch(() => undefined)));
            await db.retire();
        }
    },
};
const IDLE_WORKERS = 50;
/**
 * The instance's own loops (reaper and plan check every second, search copier every 2 s, webhook
 * and overdue-task checks less often) make 5–8 statements a second whether workers wait or not, in
 * ticks of several statements. In a window of 2.5 s one more or one fewer tick of a slower loop
 * moved the difference of the two windows by ~7 statements — 0.056 a second per worker of 50, the
 * whole target — and the row failed on ticks no waiter caused. Over 10 s that error is a quarter.
 */
const windowMs = (ctx) => Math.max(4_000, Math.round(10_000 * ctx.scale));
/**
 * Statements per second in this database (pg_stat_statements calls; see BenchServer) over an
 * idle window with no waiting worker, then over one with 50 workers parked in
 * POST /jobs/next {wait: 60s}. The value is the added load per waiting worker. BENCH_STATEMENTS=1
 * logs each window's statements and their calls.
 */
export const idleWaiters = {
    key: 'f.idle',
    guardMs: (ctx) => 2 * windowMs(ctx) + 40_000,
    async run(ctx) {
        const db = await ctx.server.createDatabase(await ctx.templates.jobclock());
        let client = null;
        const waits = [];
        try {
            const base = await ctx.host.open({ url: db.url, schedulerLoop: true });
            await db.settle();
            const c = new HttpClient(base, tokenOf('worker'), IDLE_WORKERS);
            client = c;
            const probe = await c.post('/jobs/next', { worker: 'bench-probe', limit: 1 });
            if (probe.status !== 204)
                throw unexpected('POST /jobs/next', probe);
            const window = windowMs(ctx);
            await sleep(1_000); // start-up queries of the instance are over
            const measure = async () => {
                const calls = process.env.BENCH_STATEMENTS ? await db.callsByStatement() : null;
                const before = await db.statements();
                const t0 = performance.now();
                await sleep(window);
                const after = await db.statements();
                if (calls) {
                    const now = await db.callsByStatement();
                    const diff = [...now].map(([q, n]) => [n - (calls.get(q) ?? 0), q]).filter(([d]) => d > 0);
                    ctx.log(`f.idle: calls in the window\n${diff.map(([d, q]) => `  ${String(d).padStart(5)}  ${q}`).join('\n')}`);
                }
                return ((after - before) * 1000) / (performance.now() - t0);
            };
            const idle0 = await measure();
            for (let i = 0; i < IDLE_WORKERS; i++) {
                waits.push(c.post('/jobs/next', { worker: `bench-idle-${i}`, limit: 1, wait: '60s' }).catch((err) => err));
            }
            await sleep(500); // each waiter's first (empty) lease query is over
            const idle50 = await measure();
            const early = await Promise.race([Promise.race(waits).then(() => true), sleep(0).then(() => false)]);
            if (early)
                throw new Error('a waiting POST /jobs/next {wait: 60s} answered before any job existed');
            return {
                value: Math.max(0, idle50 - idle0) / IDLE_WORKERS,
                extra: { perSecNoWaiters: idle0, perSec50Waiters: idle50, windowMs: window },
            };
        }
        finally {
            await ctx.host.close().catch(() => undefined); // answers the waiting long-polls with 204
            await Promise.race([Promise.allSettled(waits), sleep(2_000)]);
            client?.close();
            await db.retire();
        }
    },
};
//# sourceMappingURL=idle.js.map