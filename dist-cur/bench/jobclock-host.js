/**
 * Worker-thread entry that hosts one jobclock instance at a time, built the way src/main.ts
 * builds it (real services, Notifications, LeaseReaper, optionally the PeriodicScheduler loop and the
 * SearchIndexFlusher, BENCH_SEARCH_FLUSH as JOBCLOCK_SEARCH_FLUSH) and
 * listening on 127.0.0.1:0. It runs on its own thread so that the benchmark's HTTP clients,
 * which stand in for worker processes, do not share jobclock's event loop.
 */
import { appendFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import path from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import { parentPort } from 'node:worker_threads';
import pino from 'pino';
import { buildApp } from '../src/app.js';
import { systemClock } from '../src/clock.js';
import { createDb } from '../src/db/database.js';
import { knownMigrations } from '../src/db/migrate.js';
import { Notifications } from '../src/db/notifications.js';
import { jobDto } from '../src/http/schemas/jobs.js';
import { leasedJobDto } from '../src/http/schemas/workers.js';
import { DeliveryEngine } from '../src/scheduler/delivery-engine.js';
import { LeaseReaper } from '../src/scheduler/lease-reaper.js';
import { PeriodicScheduler } from '../src/scheduler/periodic-scheduler.js';
import { RetentionCleaner } from '../src/scheduler/retention-cleaner.js';
import { SearchIndexFlusher } from '../src/scheduler/search-flusher.js';
import { SearchRowCopier } from '../src/scheduler/search-row-copier.js';
import { PlanRefresher } from '../src/scheduler/plan-refresher.js';
import { loadConfig } from '../src/config.js';
import { createServices } from '../src/services/index.js';
import { currentThreadId } from './lib/cpu.js';
import { BENCH_TOKENS } from './lib/tokens.js';
let current = null;
/** BENCH_PROFILE=<folder>: a V8 CPU profile of this thread from each open() to its close(). */
const profileDir = process.env.BENCH_PROFILE ?? '';
let profiler = null;
let profiles = 0;
const logger = pino({ level: process.env.BENCH_LOG_LEVEL ?? 'silent' });
/**
 * BENCH_SLOW_LOG=<file>: requests over 15 ms, garbage collections over 2 ms and event-loop stalls
 * over 10 ms, each with its time, appended there (diagnosis only: to line a row's slow requests up
 * with the server's log of BENCH_PG_LOG).
 */
const slowLog = process.env.BENCH_SLOW_LOG ?? '';
function watchSlow(app, file) {
    const out = (m) => appendFileSync(file, `${new Date().toISOString()} ${m}\n`);
    app.addHook('onResponse', async (req, reply) => {
        if (reply.elapsedTime > 15)
            out(`slow ${req.method} ${req.routeOptions.url} ${reply.elapsedTime.toFixed(1)} ms`);
    });
    const gc = new PerformanceObserver((list) => {
        for (const e of list.getEntries())
            if (e.duration > 2)
                out(`gc ${e.duration.toFixed(1)} ms`);
    });
    gc.observe({ entryTypes: ['gc'] });
    let last = performance.now();
    const timer = setInterval(() => {
        const now = performance.now();
        if (now - last > 15)
            out(`event loop stalled ${(now - last - 5).toFixed(1)} ms`);
        last = now;
    }, 5);
    timer.unref();
    app.addHook('onClose', async () => {
        clearInterval(timer);
        gc.disconnect();
    });
}
async function open(args) {
    if (current)
        await close();
    const db = createDb({ url: args.url, poolSize: args.poolSize ?? 10, logger, applicationName: 'jobclock' });
    const notifications = new Notifications(db.url, logger);
    const ctx = {
        db,
        clock: systemClock,
        logger,
        notifications,
        instanceId: 'bench-instance',
        retentionMs: 7 * 24 * 3600 * 1000,
    };
    const services = createServices(ctx);
    const app = await buildApp({
        config: { tokens: BENCH_TOKENS, bodyLimit: 1024 * 1024 },
        db,
        logger,
        clock: systemClock,
        migrations: await knownMigrations(),
        services,
    });
    if (slowLog)
        watchSlow(app, slowLog);
    await app.listen({ port: 0, host: '127.0.0.1' });
    await notifications.start();
    const scheduler = args.schedulerLoop ? new PeriodicScheduler(ctx) : null;
    const reaper = new LeaseReaper(ctx);
    const flushMs = loadConfig({ JOBCLOCK_SEARCH_FLUSH: process.env.BENCH_SEARCH_FLUSH }).searchFlushMs;
    const flusher = flushMs === null ? null : new SearchIndexFlusher(ctx, { intervalMs: flushMs });
    scheduler?.start();
    reaper.start();
    flusher?.start();
    // as in main.ts: copies the search rows of the slices of ids the jobs have passed
    const copier = new SearchRowCopier(ctx);
    copier.start();
    const cleaner = args.retention ? new RetentionCleaner(ctx) : null;
    cleaner?.start();
    // as in main.ts: idle unless a webhook is subscribed
    // as in main.ts. Diagnosis only: BENCH_DELIVERY_BUDGET=off sends at full speed beside busy
    // workers, BENCH_DELIVERY_BUDGET=<n> at n a second
    const budget = process.env.BENCH_DELIVERY_BUDGET;
    const deliveries = new DeliveryEngine(ctx, {
        renderJob: jobDto,
        busy: budget === 'off' ? undefined : () => services.workers.busy(),
        busyRatePerSec: budget === undefined || budget === 'off' ? undefined : Number(budget),
        push: { workers: services.workers, renderLeased: leasedJobDto },
    });
    if (process.env.BENCH_DELIVERIES !== 'off')
        deliveries.start(); // off: diagnosis only (the triggers' cost alone)
    // as in main.ts; BENCH_PLAN_REFRESH=off leaves it out (diagnosis: the fresh rows without it)
    const plans = /^(off|0|false|no)$/i.test(process.env.BENCH_PLAN_REFRESH ?? 'on') ? null : new PlanRefresher(ctx);
    plans?.start();
    current = { db, app, services, ctx, notifications, scheduler, reaper, cleaner, flusher, copier, plans, deliveries };
    if (profileDir) {
        profiler = new Session();
        profiler.connect();
        await profiler.post('Profiler.enable');
        await profiler.post('Profiler.start');
    }
    return { port: app.server.address().port, tid: currentThreadId() };
}
async function close() {
    const inst = current;
    current = null;
    if (!inst)
        return;
    if (profiler) {
        const { profile } = await profiler.post('Profiler.stop');
        profiler.disconnect();
        profiler = null;
        const file = path.join(profileDir, `jobclock-${++profiles}.cpuprofile`);
        await mkdir(profileDir, { recursive: true }); // a missing folder lost every profile, silently
        await writeFile(file, JSON.stringify(profile));
    }
    inst.services.workers.shutdown();
    await Promise.all([
        inst.scheduler?.stop(),
        inst.reaper.stop(),
        inst.cleaner?.stop(),
        inst.flusher?.stop(),
        inst.copier.stop(),
        inst.plans?.stop(),
        inst.deliveries.stop(),
    ]);
    await inst.app.close();
    await inst.notifications.stop();
    await inst.db.destroy();
}
/** How many jobs a tick reports having submitted, if it says so. */
function countOf(result) {
    if (typeof result === 'number' && Number.isFinite(result))
        return result;
    if (result && typeof result === 'object') {
        for (const key of ['submitted', 'jobs', 'count']) {
            const v = result[key];
            if (typeof v === 'number' && Number.isFinite(v))
                return v;
            if (Array.isArray(v))
                return v.length;
        }
    }
    return null;
}
/**
 * Calls PeriodicScheduler.tick(now) until `expected` jobs exist or the time box ends. Only the
 * time spent inside tick() is counted; progress is checked between ticks, outside the timing.
 */
async function tick(args) {
    const inst = current;
    if (!inst)
        throw new Error('no jobclock instance is open');
    const scheduler = new PeriodicScheduler(inst.ctx);
    const fn = scheduler.tick;
    if (typeof fn !== 'function')
        throw new Error('NotAvailable: PeriodicScheduler.tick(now) does not exist yet');
    const countJobs = async () => {
        const { rows } = await inst.db.pool.query('select count(*)::int as n from job');
        return rows[0].n;
    };
    let submitted = 0;
    let tickMs = 0;
    let ticks = 0;
    let idleTicks = 0;
    const started = performance.now();
    while (submitted < args.expected) {
        if (performance.now() - started > args.timeboxMs)
            break;
        const t0 = performance.now();
        const result = await fn.call(scheduler, systemClock.now());
        tickMs += performance.now() - t0;
        ticks++;
        const reported = countOf(result);
        const before = submitted;
        // Trust a tick's own count while it is positive; confirm with the table otherwise.
        if (reported !== null && reported > 0)
            submitted += reported;
        else
            submitted = await countJobs();
        if (submitted === before) {
            idleTicks++;
            if (idleTicks >= 50)
                throw new Error(`PeriodicScheduler.tick made no progress in 50 calls (${submitted} of ${args.expected} submitted)`);
        }
        else
            idleTicks = 0;
    }
    submitted = await countJobs();
    await scheduler.stop();
    return { submitted, tickMs, wallMs: performance.now() - started, ticks, timedOut: submitted < args.expected };
}
parentPort.on('message', (msg) => {
    const run = async () => {
        switch (msg.cmd) {
            case 'open':
                return open(msg.args);
            case 'close':
                return close();
            case 'tick':
                return tick(msg.args);
        }
    };
    run().then((value) => parentPort.postMessage({ id: msg.id, ok: true, value }), (err) => parentPort.postMessage({ id: msg.id, ok: false, error: err instanceof Error ? err.message : String(err) }));
});
//# sourceMappingURL=jobclock-host.js.map