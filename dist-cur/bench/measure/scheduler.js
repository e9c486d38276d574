import { scaled, sleep } from '../lib/context.js';
import { NotAvailable } from '../lib/http.js';
import { latencySummary } from '../lib/stats.js';
export const burstTasks = (ctx) => scaled(ctx, 100_000, 1_000);
const burstTimeboxMs = (ctx) => Math.max(5_000, Math.round(15_000 * ctx.scale));
const HOUR = 3600_000;
/** The burst with every task carrying the fields of tasks you can leave alone (or not). */
function burst(key, fields) {
    return {
        key,
        guardMs: (ctx) => burstTimeboxMs(ctx) + 90_000,
        run: (ctx) => runBurst(ctx, fields),
    };
}
export const schedulerBurst = burst('g.jobclock', false);
/** (g) with maxAttempts 3, a catch-up window, alertAfter and endAt on every task: ≥ 0.9× g.jobclock. */
export const schedulerBurstFields = burst('g.fields', true);
async function runBurst(ctx, fields) {
    const db = await ctx.server.createDatabase(await ctx.templates.jobclockTasks());
    try {
        const n = ctx.templates.tasks;
        if (fields) {
            await db.exec(`update periodic_task set max_attempts = 3, catch_up_window = 3600000, alert_after = 7200000,
                                    end_at = now() + interval '365 days'`);
        }
        await ctx.host.open({ url: db.url, schedulerLoop: false });
        await db.settle();
        const r = await ctx.host.tick({ expected: n, timeboxMs: burstTimeboxMs(ctx) });
        if (r.submitted > n)
            throw new Error(`PeriodicScheduler submitted ${r.submitted} jobs for ${n} due runs`);
        const { rows } = await db.exec(`select count(*)::int as n from periodic_task where nextrun <= now()`);
        const stillDue = rows[0].n;
        const result = {
            value: (r.submitted * 1000) / r.tickMs,
            extra: { tasks: n, submitted: r.submitted, tickMs: r.tickMs, ticks: r.ticks, wallMs: r.wallMs, stillDue },
            ...(r.timedOut ? { note: `time-boxed: ${r.submitted} of ${n}` } : {}),
        };
        if (!r.timedOut && stillDue > 0)
            result.note = `${stillDue} tasks left with nextRun in the past`;
        return result;
    }
    finally {
        await ctx.host.close().catch(() => undefined);
        await db.retire();
    }
}
/**
 * The same 100,000 job INSERTs (the columns the scheduler fills for a periodic run) from a plain
 * loop: 1000 rows per INSERT … VALUES statement, one connection, ids known up front.
 */
export const sqlBurst = {
    key: 'g.sql',
    guardMs: (ctx) => burstTimeboxMs(ctx) + 90_000,
    async run(ctx) {
        const db = await ctx.server.createDatabase(await ctx.templates.jobclockTasks());
        let client = null;
        try {
            const n = ctx.templates.tasks;
            const slot = ctx.templates.tasksSlot;
            client = await db.client('bench-raw');
            await db.settle();
            const c = client;
            const insert = (rows) => `insert into job (type, group_, args, priority, periodic_task_id, scheduled_at, run_at, max_attempts, timebox)
         values ${Array.from({ length: rows }, (_, k) => `('bench', 'default', null, 0, $${k + 2}, $1, $1, 1, 1800000)`).join(', ')}`;
            const full = insert(1000);
            let done = 0;
            const started = performance.now();
            for (let i = 0; i < n; i += 1000) {
                const rows = Math.min(1000, n - i);
                const ids = Array.from({ length: rows }, (_, k) => `bench-${i + k + 1}`);
                const res = await c.query(rows === 1000 ? full : insert(rows), [slot, ...ids]);
                done += res.rowCount ?? 0;
            }
            const ms = performance.now() - started;
            return { value: (done * 1000) / ms, extra: { jobs: done, ms } };
        }
        finally {
            await client?.end().catch(() => undefined);
            await db.retire();
        }
    },
};
export const latenessTasks = (ctx) => scaled(ctx, 10_000, 200);
export const latenessWindowMs = (ctx) => Math.max(5_000, Math.round(60_000 * ctx.scale));
/**
 * `n` tasks whose next runs are spread evenly over a window, with the real PeriodicScheduler loop
 * on the real clock. Lateness is job.created_at − the run's slot (the nextRun we set); and, since
 * created_at may be the `now` a tick started with rather than the moment the job could be leased,
 * also the commit time of the job's INSERT (pg_xact_commit_timestamp(xmin)) − the slot.
 */
export const lateness = {
    key: 'h.lateness',
    guardMs: (ctx) => latenessWindowMs(ctx) + 90_000,
    async run(ctx) {
        const db = await ctx.server.createDatabase(await ctx.templates.jobclock());
        try {
            const n = latenessTasks(ctx);
            const window = latenessWindowMs(ctx);
            const lead = 5_000;
            const start = Date.now() + lead;
            const slots = Array.from({ length: n }, (_, i) => start + Math.floor((i * window) / n));
            const ids = slots.map((_, i) => `late-${i + 1}`);
            await db.exec(`insert into periodic_task (id, task, timer, nextrun, created, updated)
         select id, 'bench', 'every 1h', to_timestamp(slot / 1000.0), to_timestamp((slot - $3::bigint) / 1000.0), now()
           from unnest($1::text[], $2::bigint[]) as t(id, slot)`, [ids, slots, HOUR]);
            await db.settle();
            await ctx.host.open({ url: db.url, schedulerLoop: true });
            const openedLate = Date.now() - start;
            if (openedLate > 0)
                throw new Error(`set-up took ${lead + openedLate} ms, past the first slot`);
            await sleep(start + window - Date.now() + 1_000);
            const countJobs = async () => Number((await db.exec('select count(*)::int as n from job')).rows[0].n);
            const until = Date.now() + 15_000;
            let count = await countJobs();
            while (count < n && Date.now() < until) {
                await sleep(250);
                count = await countJobs();
            }
            if (count === 0)
                throw new NotAvailable('the PeriodicScheduler loop submitted no job');
            const { rows } = await db.exec(`select periodic_task_id as id, (extract(epoch from created_at) * 1000)::float8 as created,
                (extract(epoch from pg_xact_commit_timestamp(xmin)) * 1000)::float8 as committed
           from job where periodic_task_id is not null`);
            const slotOf = new Map(ids.map((id, i) => [id, slots[i]]));
            const typed = rows;
            const samples = typed.map((r) => r.created - slotOf.get(r.id));
            const committed = typed.filter((r) => r.committed !== null).map((r) => r.committed - slotOf.get(r.id));
            const s = latencySummary(samples);
            const c = latencySummary(committed);
            const result = {
                value: s.p99,
                samples,
                extra: {
                    ...s,
                    tasks: n,
                    windowMs: window,
                    submitted: count,
                    committedN: c.n,
                    committedP50: c.p50,
                    committedP95: c.p95,
                    committedP99: c.p99,
                    committedMax: c.max,
                    committedMin: c.min,
                },
                ...(count < n ? { note: `${n - count} of ${n} runs not submitted within 15 s of the window's end` } : {}),
            };
            if (count > n)
                result.note = `${count} jobs for ${n} runs`;
            return result;
        }
        finally {
            await ctx.host.close().catch(() => undefined);
            await db.retire();
        }
    },
};
//# sourceMappingURL=scheduler.js.map