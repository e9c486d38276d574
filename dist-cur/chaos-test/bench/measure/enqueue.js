/**
 * (d) enqueue: POST /jobs ×8 vs pg-boss 12 send() ×8; POST /jobs/batch of 1000 vs pg-boss 12 insert() of
 * 1000 and a raw multi-row INSERT.
 */
import { PgBoss as PgBoss12 } from 'pg-boss-12';
import { rate, scaled, warmThenTime } from '../lib/context.js';
import { HttpClient, unexpected } from '../lib/http.js';
import { tokenOf } from '../lib/tokens.js';
import { PGBOSS_QUEUE, pgBoss12Options } from '../lib/templates.js';
const singleJobs = (ctx) => scaled(ctx, 4_000, 200);
const batchJobs = (ctx) => scaled(ctx, 20_000, 2_000);
const timeboxMs = (ctx) => Math.max(2_000, Math.round(3_000 * ctx.scale));
const CLIENTS = 8;
const BATCH = 1000;
/**
 * Runs `clients` loops that share one counter of `n` operations, warmed up first (see
 * warmThenTime): the warm-up's operations get indexes from `n` on, so the timed run does all `n`.
 */
async function loops(ctx, clients, n, timebox, op) {
    let next = n;
    let limit = Number.POSITIVE_INFINITY;
    const t = await warmThenTime(ctx, timebox, async (until) => {
        let done = 0;
        await Promise.all(Array.from({ length: clients }, async (_, loop) => {
            while (next < limit && performance.now() < until.deadline) {
                const i = next;
                next += 1;
                const added = await op(i, loop); // not `done += await …`: that reads `done` before awaiting
                done += added;
            }
        }));
        next = 0;
        limit = n;
        return done;
    });
    return { done: t.done, ms: t.ms, cpu: t.cpu };
}
/**
 * A producer against a fresh jobclock: `clients` loops sharing `n` operations over as many
 * keep-alive connections; `op` sends one request and returns the jobs it created.
 */
async function jobclockProducer(ctx, clients, n, op, after, timebox = timeboxMs(ctx)) {
    const db = await ctx.server.createDatabase(await ctx.templates.jobclock());
    let client = null;
    try {
        const base = await ctx.host.open({ url: db.url, schedulerLoop: true });
        await db.settle();
        const c = new HttpClient(base, tokenOf('producer'), clients);
        client = c;
        const r = await loops(ctx, clients, n, timebox, (i) => op(c, i));
        if (process.env.BENCH_STATEMENTS)
            ctx.log(`jobclock producer: top statements\n${await db.topStatements()}`);
        await after?.(db);
        return r;
    }
    finally {
        client?.close();
        await ctx.host.close().catch(() => undefined);
        await db.retire();
    }
}
export const postJobs = {
    key: 'd.post',
    guardMs: (ctx) => timeboxMs(ctx) + 45_000,
    async run(ctx) {
        const n = singleJobs(ctx);
        const { done, ms, cpu } = await jobclockProducer(ctx, CLIENTS, n, async (c, i) => {
            const res = await c.post('/jobs', { type: 'bench', args: { n: i } });
            if (res.status !== 201)
                throw unexpected('POST /jobs', res);
            return 1;
        });
        return rate(done, ms, n, cpu);
    },
};
const debounceSubmissions = (ctx) => scaled(ctx, 100_000, 2_000);
const DEBOUNCE_KEYS = 1_000;
/** The whole run's time, the warm-up's 1.5 s aside: 100,000 submissions at 200 a second. */
const debounceTimeboxMs = (ctx) => Math.max(timeboxMs(ctx), Math.round(500_000 * ctx.scale));
/**
 * POST /jobs with uniqueKey + debounce, as the issue asks: 100,000 submissions (scaled by
 * BENCH_SCALE) over 1,000 keys — submission i has key `doc:<i mod 1,000>` — each making the key's
 * job or moving it; then exactly 1,000 jobs must exist for those keys. Submissions/s against d.post
 * (plain POST /jobs ×8, time-boxed) in the same round. The warm-up (1.5 s, like every row's) goes
 * to other keys, so the timed submissions start with no job of theirs. Not time-boxed: it runs
 * only when BENCH_ONLY names it (some 2–3 minutes a round on the 2-core machine).
 */
export const postDebounced = {
    key: 'd.debounce',
    guardMs: (ctx) => debounceTimeboxMs(ctx) + 45_000,
    async run(ctx) {
        const n = debounceSubmissions(ctx);
        let jobs = 0;
        const { done, ms, cpu } = await jobclockProducer(ctx, CLIENTS, n, async (c, i) => {
            // the warm-up's indexes are n and on (see loops)
            const key = i < n ? `doc:${i % DEBOUNCE_KEYS}` : `warm:${i % DEBOUNCE_KEYS}`;
            const res = await c.post('/jobs', { type: 'bench', uniqueKey: key, debounce: '1h', args: { n: i } });
            if (res.status !== 201 && res.status !== 200)
                throw unexpected('POST /jobs', res);
            return 1;
        }, async (db) => {
            jobs = (await db.exec(`select count(*)::int as n from job where debounce_key like 'doc:%'`)).rows[0].n;
        }, debounceTimeboxMs(ctx));
        if (done !== n)
            throw new Error(`${done} of ${n} debounced submissions made in the time box`);
        if (jobs !== DEBOUNCE_KEYS)
            throw new Error(`${done} debounced submissions over ${DEBOUNCE_KEYS} keys made ${jobs} jobs`);
        const r = rate(done, ms, n, cpu);
        r.extra = { ...r.extra, jobsMade: jobs };
        return r;
    },
};
export const postBatch = {
    key: 'd.batch',
    guardMs: (ctx) => timeboxMs(ctx) + 45_000,
    async run(ctx) {
        const batches = Math.ceil(batchJobs(ctx) / BATCH);
        const { done, ms, cpu } = await jobclockProducer(ctx, 1, batches, async (c, b) => {
            const jobs = Array.from({ length: BATCH }, (_, k) => ({ type: 'bench', args: { n: b * BATCH + k } }));
            // as the README tells a bulk load to: the new jobs' ids only (Prefer: return=minimal)
            const res = await c.post('/jobs/batch', { jobs }, undefined, { prefer: 'return=minimal' });
            if (res.status !== 201)
                throw unexpected('POST /jobs/batch', res);
            const created = res.body.jobs;
            if (!Array.isArray(created) || created.length !== BATCH)
                throw new Error('POST /jobs/batch: 201 without 1000 jobs');
            return BATCH;
        });
        return rate(done, ms, batches * BATCH, cpu);
    },
};
/** The same 1000 jobs per statement, as one INSERT … VALUES (…), (…), … on one connection. */
export const rawInsert = {
    key: 'd.raw',
    guardMs: (ctx) => timeboxMs(ctx) + 45_000,
    async run(ctx) {
        const db = await ctx.server.createDatabase(await ctx.templates.jobclock());
        const client = await db.client('bench-raw');
        try {
            const values = Array.from({ length: BATCH }, (_, k) => `('bench', $${k + 1}::jsonb, now())`).join(', ');
            const text = `insert into job (type, args, run_at) values ${values} returning id`;
            const batches = Math.ceil(batchJobs(ctx) / BATCH);
            await db.settle();
            const { done, ms, cpu } = await loops(ctx, 1, batches, timeboxMs(ctx), async (b) => {
                const params = Array.from({ length: BATCH }, (_, k) => JSON.stringify({ n: b * BATCH + k }));
                const res = await client.query(text, params);
                return res.rowCount ?? 0;
            });
            return rate(done, ms, batches * BATCH, cpu);
        }
        finally {
            await client.end();
            await db.retire();
        }
    },
};
/**
 * The same 1000 jobs per statement through jobclock's SQL function, as an application adds them
 * inside its own transaction: `SELECT jobclock_add_jobs($1)` (validation included), one connection.
 */
export const sqlAddJobs = {
    key: 'd.sql',
    guardMs: (ctx) => timeboxMs(ctx) + 45_000,
    async run(ctx) {
        const db = await ctx.server.createDatabase(await ctx.templates.jobclock());
        const client = await db.client('bench-sql-add-jobs');
        try {
            const batches = Math.ceil(batchJobs(ctx) / BATCH);
            await db.settle();
            const { done, ms, cpu } = await loops(ctx, 1, batches, timeboxMs(ctx), async (b) => {
                const jobs = Array.from({ length: BATCH }, (_, k) => ({ type: 'bench', args: { n: b * BATCH + k } }));
                const res = await client.query('select count(*)::int as n from jobclock_add_jobs($1::jsonb)', [JSON.stringify(jobs)]);
                return res.rows[0].n;
            });
            return rate(done, ms, batches * BATCH, cpu);
        }
        finally {
            await client.end();
            await db.retire();
        }
    },
};
/** pg-boss 12: 8 loops of send(), or one caller inserting 1000 jobs per insert(). */
function pgBoss12Enqueue(key, how) {
    return {
        key,
        guardMs: (ctx) => timeboxMs(ctx) + 45_000,
        async run(ctx) {
            const db = await ctx.server.createDatabase(await ctx.templates.pgboss12());
            const boss = new PgBoss12(pgBoss12Options(db.url));
            boss.on('error', (err) => ctx.log(`pg-boss 12 error: ${err.message}`));
            try {
                await boss.start();
                await db.settle();
                if (how === 'send') {
                    const n = singleJobs(ctx);
                    const { done, ms, cpu } = await loops(ctx, CLIENTS, n, timeboxMs(ctx), async (i) => {
                        const id = await boss.send(PGBOSS_QUEUE, { n: i });
                        if (!id)
                            throw new Error('pg-boss 12 send() returned no id');
                        return 1;
                    });
                    return rate(done, ms, n, cpu);
                }
                const batches = Math.ceil(batchJobs(ctx) / BATCH);
                const { done, ms, cpu } = await loops(ctx, 1, batches, timeboxMs(ctx), async (b) => {
                    const ids = await boss.insert(PGBOSS_QUEUE, Array.from({ length: BATCH }, (_, k) => ({ data: { n: b * BATCH + k } })));
                    // insert() answers the ids only when asked to; count the rows instead of trusting it
                    return ids?.length ?? BATCH;
                });
                const check = await db.exec(`select count(*)::int as n from pgboss.job where name = '${PGBOSS_QUEUE}'`);
                const rows = check.rows[0].n;
                if (rows < done)
                    throw new Error(`pg-boss 12 insert(): ${done} jobs counted, ${rows} rows in pgboss.job`);
                return rate(done, ms, batches * BATCH, cpu);
            }
            finally {
                await boss.stop({ graceful: false }).catch(() => undefined);
                await db.retire();
            }
        },
    };
}
export const pgBoss12Send = pgBoss12Enqueue('d.pgboss12', 'send');
export const pgBoss12Insert = pgBoss12Enqueue('d.pgboss12ins', 'insert');
//# sourceMappingURL=enqueue.js.map