/**
 * `npm run bench`: jobclock side by side with the raw SQL ceiling, pg-boss and graphile-worker,
 * on one embedded PostgreSQL with default durable settings, a fresh database per measurement,
 * several rounds in rotated order. Prints one table; writes bench/results/latest.json.
 *
 * BENCH_ROUNDS (default 3), BENCH_SCALE (default 1; 0.1 for a quick run),
 * BENCH_ONLY (comma-separated key prefixes, e.g. "b.,c."), BENCH_LATENESS=off to skip (h).
 * The growth rows (j.) run only when named (BENCH_ONLY=b.loop,j.loop,j.reads): they build a table of
 * BENCH_HISTORY (default 10,000,000) final jobs first, which takes minutes.
 */
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { NotAvailable } from './lib/http.js';
import { JobclockHost } from './lib/jobclock.js';
import { BenchServer } from './lib/postgres.js';
import { fmt } from './lib/stats.js';
import { Templates } from './lib/templates.js';
import { pgBoss12Insert, pgBoss12Send, postBatch, postDebounced, postJobs, rawInsert, sqlAddJobs } from './measure/enqueue.js';
import { growthBase, growthChurn, growthHistoryOnly, growthLoop, growthPaced, growthPacedBase, growthReads, growthRetention, } from './measure/growth.js';
import { chainLinks, chainPlain, fanInJoin } from './measure/dependencies.js';
import { idleWaiters, jobclockWake, rawWake } from './measure/idle.js';
import { burstTasks, lateness, schedulerBurst, schedulerBurstFields, sqlBurst } from './measure/scheduler.js';
import { ledgerPages } from './measure/ledger.js';
import { jobclockLease100, slimLease100 } from './measure/lease-statement.js';
import { scheduleEngine } from './measure/schedule-engine.js';
import { goLoop, goWorker, pythonLoop, pythonWorker } from './measure/worker-libraries.js';
import { graphile018Processing, jobclockLoop, jobclockPerJob, jobclockPerJobMinimal, jobclockFresh, jobclockFreshAnalyzed, jobclockReports, jobclockTypes, jobclockWait, pgBoss12Fetch, pgBoss12Work, processingJobs, rawClaim1, rawClaim100, jobclockInterleaved, jobclockGroups, jobclockSeq1000, jobclockSeq100k, jobclockGroups100k, jobclockRate1000, jobclockGroups1000, jobclockHooks3, jobclockPolicy, jobclockPolicyRate, jobclockLimited, jobclockLimitedRunner, jobclockRunner, } from './measure/worker-protocol.js';
import { jobclockPush } from './measure/push.js';
import { renderTable, summarize, summarizeCpu, summarizePgCpu } from './report.js';
function envNumber(name, fallback, min) {
    const raw = process.env[name];
    if (raw === undefined || raw.trim() === '')
        return fallback;
    const v = Number(raw);
    if (!Number.isFinite(v) || v < min) {
        process.stderr.write(`bench: ${name} must be a number ≥ ${min}, got "${raw}"\n`);
        process.exit(2);
    }
    return v;
}
const ROUNDS = Math.floor(envNumber('BENCH_ROUNDS', 3, 1));
const SCALE = envNumber('BENCH_SCALE', 1, 0.01);
const ONLY = (process.env.BENCH_ONLY ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
const LATENESS = !/^(off|0|false|no)$/i.test(process.env.BENCH_LATENESS ?? 'on');
/**
 * Every measurement of a round, in the order of round 1. Round r starts r·⌈n/rounds⌉ further along,
 * and every second round runs backwards, so that each pair also swaps which side goes first.
 */
const UNITS = [
    jobclockInterleaved,
    pgBoss12Work,
    rawClaim1,
    rawClaim100,
    jobclockLease100,
    slimLease100,
    jobclockLoop,
    jobclockHooks3,
    jobclockPush,
    jobclockRunner,
    pgBoss12Fetch,
    jobclockTypes,
    graphile018Processing,
    jobclockWait,
    jobclockReports,
    jobclockPerJob,
    jobclockPerJobMinimal,
    jobclockFresh,
    jobclockFreshAnalyzed,
    jobclockGroups,
    jobclockSeq1000,
    jobclockSeq100k,
    jobclockGroups100k,
    jobclockRate1000,
    jobclockGroups1000,
    jobclockPolicy,
    jobclockPolicyRate,
    jobclockLimited,
    jobclockLimitedRunner,
    pythonLoop,
    pythonWorker,
    goLoop,
    goWorker,
    postJobs,
    postDebounced,
    pgBoss12Send,
    postBatch,
    pgBoss12Insert,
    rawInsert,
    sqlAddJobs,
    jobclockWake,
    rawWake,
    idleWaiters,
    fanInJoin,
    chainLinks,
    chainPlain,
    schedulerBurst,
    schedulerBurstFields,
    sqlBurst,
    ledgerPages,
    scheduleEngine,
    growthBase,
    growthLoop,
    growthHistoryOnly,
    growthPacedBase,
    growthPaced,
    growthReads,
    growthChurn,
    growthRetention,
];
/**
 * Measurements run only when BENCH_ONLY names them (they answer one question and take long): the
 * growth rows (j.*, which build tables of millions of jobs first), two diagnostic rows and
 * d.debounce (100,000 submissions, not time-boxed).
 */
const isOptIn = (u) => u.key.startsWith('j.') || u === jobclockInterleaved || u === pgBoss12Work || u === postDebounced;
const selected = (u) => isOptIn(u) ? ONLY.some((p) => p.length > 2 && u.key.startsWith(p)) : ONLY.length === 0 || ONLY.some((p) => u.key.startsWith(p));
const log = (message) => process.stderr.write(`${message}\n`);
function repoRoot() {
    let dir = path.dirname(fileURLToPath(import.meta.url));
    for (let i = 0; i < 6; i++) {
        if (existsSync(path.join(dir, 'package.json')))
            return dir;
        dir = path.dirname(dir);
    }
    return process.cwd();
}
function describe(key, r) {
    if (key === 'i.schedules')
        return Object.entries(r.extra ?? {})
            .map(([k, v]) => `${k} ${fmt(v)}/s`)
            .join(', ');
    if (key.startsWith('e.') || key.startsWith('h.')) {
        const e = r.extra ?? {};
        return `p50 ${fmt(e.p50 ?? Number.NaN)} p99 ${fmt(e.p99 ?? Number.NaN)} max ${fmt(e.max ?? Number.NaN)} ms`;
    }
    if (key === 'f.idle') {
        const e = r.extra ?? {};
        return `${fmt(e.perSecNoWaiters ?? Number.NaN)} → ${fmt(e.perSec50Waiters ?? Number.NaN)} statements/s`;
    }
    return `${fmt(r.value)} /s${r.note ? ` (${r.note})` : ''}`;
}
class GuardTimeout extends Error {
}
async function runUnit(ctx, unit, label) {
    // The unit keeps the host it started with, even if a guard timeout replaces ctx.host.
    const own = { ...ctx };
    const started = performance.now();
    let timer;
    const guard = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new GuardTimeout(`gave up after ${Math.round(unit.guardMs(ctx) / 1000)} s`)), unit.guardMs(ctx));
    });
    try {
        const r = await Promise.race([unit.run(own), guard]);
        log(`${label} ${unit.key.padEnd(12)} ${describe(unit.key, r)}  [${((performance.now() - started) / 1000).toFixed(1)} s]`);
        return r;
    }
    catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        const short = message.split('\n')[0].slice(0, 160);
        log(`${label} ${unit.key.padEnd(12)} n/a: ${short}${err instanceof NotAvailable ? '' : ' (error)'}`);
        if (process.env.BENCH_DEBUG && err instanceof Error)
            log(err.stack ?? message);
        if (err instanceof GuardTimeout || ctx.host.dead) {
            // A hung unit or a crashed thread: drop that jobclock instance and carry on with a new one.
            await ctx.host.terminate().catch(() => undefined);
            ctx.host = JobclockHost.start();
        }
        return { error: short };
    }
    finally {
        clearTimeout(timer);
    }
}
async function main() {
    const t0 = performance.now();
    log(`jobclock bench: ${ROUNDS} round(s), scale ${SCALE}${ONLY.length ? `, only ${ONLY.join(',')}` : ''}`);
    const server = await BenchServer.start();
    let host = null;
    const stop = async () => {
        await host?.terminate().catch(() => undefined);
        await server.stop().catch(() => undefined);
    };
    process.once('SIGINT', () => {
        void stop().then(() => process.exit(130));
    });
    try {
        const pgVersion = await server.serverVersion();
        const pgSettings = await server.settings([
            'fsync',
            'synchronous_commit',
            'full_page_writes',
            'wal_level',
            'shared_buffers',
            'max_connections',
            'shared_preload_libraries',
            'track_commit_timestamp',
        ]);
        log(`PostgreSQL ${pgVersion} (embedded): fsync=${pgSettings.fsync} synchronous_commit=${pgSettings.synchronous_commit} full_page_writes=${pgSettings.full_page_writes}`);
        host = JobclockHost.start();
        const ctx = { server, host, templates: null, scale: SCALE, rounds: ROUNDS, log };
        ctx.templates = new Templates(server, processingJobs(ctx), burstTasks(ctx), log);
        const units = UNITS.filter(selected);
        // Every code path measured cold in the first measurement of a process was slower by up to a
        // third than in later rounds (JIT compilation of the jobclock thread, the clients and the
        // libraries; pools; plan caches), whichever row came first. So each processing and enqueue
        // measurement runs once untimed before round 1, its result thrown away — but d.debounce, whose
        // 100,000 submissions took 160-200 s untimed: its own 1.5 s warm-up (on other keys) stays.
        if (!/^(off|0|false|no)$/i.test(process.env.BENCH_PREWARM ?? 'on')) {
            const warm = units.filter((u) => /^[bcd]\./.test(u.key) && u !== postDebounced);
            for (const unit of warm)
                await runUnit(ctx, unit, 'warm-up  ');
        }
        const rounds = [];
        const step = Math.max(1, Math.ceil(units.length / ROUNDS));
        for (let r = 0; r < ROUNDS; r++) {
            const offset = (r * step) % Math.max(1, units.length);
            const rotated = [...units.slice(offset), ...units.slice(0, offset)];
            const order = r % 2 === 1 ? rotated.reverse() : rotated;
            const results = new Map();
            for (const unit of order)
                results.set(unit.key, await runUnit(ctx, unit, `round ${r + 1}/${ROUNDS}`));
            rounds.push(results);
        }
        host = ctx.host;
        let latenessResults = null;
        if (LATENESS && selected(lateness)) {
            latenessResults = new Map([[lateness.key, await runUnit(ctx, lateness, 'once     ')]]);
            host = ctx.host;
        }
        const scheduleNames = [
            ...new Set(rounds.flatMap((m) => {
                const r = m.get('i.schedules');
                return r && !('error' in r) ? Object.keys(r.extra ?? {}) : [];
            })),
        ];
        const { rows, figures } = summarize(rounds, latenessResults, scheduleNames, server.statementSource);
        const cpus = os.cpus();
        const machine = `${cpus[0]?.model.trim() ?? 'unknown CPU'} × ${cpus.length}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.type()} ${os.release()}`;
        const date = new Date().toISOString();
        const seconds = (performance.now() - t0) / 1000;
        const header = `jobclock benchmark — ${date.slice(0, 16).replace('T', ' ')} UTC — ${machine}\n` +
            `Node ${process.version}, PostgreSQL ${pgVersion} embedded (fsync=${pgSettings.fsync}, synchronous_commit=${pgSettings.synchronous_commit}, ` +
            `full_page_writes=${pgSettings.full_page_writes}; also max_connections=${pgSettings.max_connections}, ` +
            `shared_preload_libraries=${pgSettings.shared_preload_libraries || '(none)'}, track_commit_timestamp=${pgSettings.track_commit_timestamp}), ` +
            `${ROUNDS} round(s) rotated, scale ${SCALE}, ${seconds.toFixed(0)} s`;
        const cpu = summarizeCpu(rounds);
        process.stdout.write(`\n${header}\n\n${renderTable(rows)}\n`);
        if (cpu)
            process.stdout.write(`\nWhere the CPU went, per job (from /proc/…/schedstat; steal time excluded):\n\n${cpu.table}\n`);
        const pgCpu = summarizePgCpu(rounds);
        if (pgCpu)
            process.stdout.write(`\nPostgreSQL's share by process (sampled every 250 ms, so autovacuum workers that exit are counted):\n\n${pgCpu}\n`);
        const outDir = path.join(repoRoot(), 'bench', 'results');
        await mkdir(outDir, { recursive: true });
        const serialize = (m) => Object.fromEntries(m);
        await writeFile(path.join(outDir, 'latest.json'), `${JSON.stringify({
            date,
            machine,
            node: process.version,
            postgres: { version: pgVersion, settings: pgSettings, statementSource: server.statementSource },
            rounds: ROUNDS,
            scale: SCALE,
            only: ONLY,
            seconds,
            table: rows,
            figures,
            cpuPerJob: cpu?.figures ?? null,
            perRound: rounds.map(serialize),
            lateness: latenessResults ? serialize(latenessResults) : null,
        }, null, 2)}\n`);
        log(`\nwrote ${path.relative(process.cwd(), path.join(outDir, 'latest.json')) || 'latest.json'}`);
    }
    finally {
        await stop();
    }
}
// A measurement that failed half-way may leave a request or query to fail later: say so, go on.
process.on('unhandledRejection', (err) => {
    log(`(late failure ignored: ${err instanceof Error ? err.message.split('\n')[0] : String(err)})`);
});
main().then(() => process.exit(0), (err) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
});
//# sourceMappingURL=run.js.map