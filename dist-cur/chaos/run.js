/**
 * `npm run chaos`: three jobclock processes on one embedded PostgreSQL under a steady mixed load
 * (producers, 20 workers, 100 periodic tasks every 2 s) while faults are injected — backends
 * terminated every few seconds, one instance SIGKILLed (a replacement started later), PostgreSQL
 * itself stopped and started again while long-polls are held. Then it drains and checks: every job
 * answered 201 finished exactly once, none stuck, no periodic slot submitted twice, the surviving
 * instances ready. Prints a table of figures and a `CHAOS_RESULT {json}` line; exits 1 on any
 * violation.
 *
 * CHAOS_SECONDS (default 120): how long the load and the faults last.
 * CHAOS_CUT_EVERY_MS (default 2500): the mean pause between two rounds of backend terminations.
 * CHAOS_KEEP=1 keeps the temporary folder (instance logs, PostgreSQL data) for a look afterwards.
 */
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { ensureDatabase } from '../src/db/database.js';
import { freePort, startEmbedded } from '../src/db/embedded.js';
// the compiled service next to this compiled script (dist/chaos/run.js → dist/src/main.js)
const mainJs = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../src/main.js');
/** soak (chaos/soak.ts): the same load without faults, for longer, sampling each instance's memory and event-loop lag */
const SOAK = process.env.CHAOS_MODE === 'soak';
const SECONDS = SOAK ? Number(process.env.SOAK_MINUTES ?? 30) * 60 : Number(process.env.CHAOS_SECONDS ?? 120);
/** the mean pause between two rounds of backend terminations */
const CUT_EVERY_MS = Number(process.env.CHAOS_CUT_EVERY_MS ?? 2_500);
const WORKERS = 20;
const TASKS = 100;
const INSTANCES = 3;
const LEASE = '5s';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (msg) => process.stderr.write(`[chaos ${new Date().toISOString().slice(11, 23)}] ${msg}\n`);
// ---------------------------------------------------------------------------------------------
// figures
const figures = {
    accepted: 0, // job ids answered 201
    producerFailures: 0, // requests that got no 201 (503, cut connection): the job may or may not exist
    leases: 0,
    leasedJobs: 0,
    finishOk: 0,
    failReports: 0,
    report409: 0,
    heartbeat409: 0,
    terminatedBackends: 0,
    terminations: 0,
    instanceKills: 0,
    instanceStops: 0,
    stopMs: 0,
    instanceStarts: 0,
    pgRestarts: 0,
    status5xx: new Map(),
    connectionErrors: 0,
    recoveryMs: null,
    pgDownMs: 0,
    longPollsHeld: 0, // lease requests waiting when PostgreSQL was stopped
};
const accepted = new Set();
const finished200 = new Map();
const violations = [];
let tmp = '';
let dbUrl = '';
const instances = [];
async function startInstance(name) {
    const port = await freePort();
    const out = createWriteStream(path.join(tmp, `${name}.log`));
    const child = spawn(process.execPath, [mainJs], {
        env: { PATH: process.env.PATH ?? '', DATABASE_URL: dbUrl, PORT: String(port), LOG_LEVEL: 'warn' },
        stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.pipe(out);
    child.stderr.pipe(out);
    const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
    const instance = { name, port, child, killed: false, exited };
    instances.push(instance);
    figures.instanceStarts++;
    for (let i = 0; i < 300; i++) {
        if (child.exitCode !== null)
            throw new Error(`${name} exited at start-up; see ${name}.log in ${tmp}`);
        const res = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => null);
        if (res?.status === 200)
            return instance;
        await sleep(100);
    }
    throw new Error(`${name} not ready within 30 s`);
}
const alive = () => instances.filter((i) => !i.killed && i.child.exitCode === null);
async function once(instance, method, url, body, timeoutMs = 70_000) {
    const res = await fetch(`http://127.0.0.1:${instance.port}${url}`, {
        method,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? null : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    if (res.status >= 500)
        figures.status5xx.set(res.status, (figures.status5xx.get(res.status) ?? 0) + 1);
    if (res.status >= 500 && res.status !== 503)
        violations.push(`${method} ${url} answered ${res.status}: ${text.slice(0, 300)}`);
    return { status: res.status, body: text ? JSON.parse(text) : null };
}
/** A client bound to an instance by index; moves to another one when its instance is gone. */
class Client {
    slot;
    constructor(slot) {
        this.slot = slot;
    }
    instance() {
        const live = alive();
        if (live.length === 0)
            throw new Error('no instance alive');
        return live[this.slot % live.length];
    }
    /** One attempt; a connection error counts and rethrows. */
    async try(method, url, body) {
        try {
            return await once(this.instance(), method, url, body);
        }
        catch (err) {
            figures.connectionErrors++;
            this.slot++;
            throw err;
        }
    }
    /** Retries 503s and cut connections until an answer below 500 (or the deadline). */
    async call(method, url, body, untilMs = Date.now() + 120_000) {
        for (;;) {
            try {
                const a = await this.try(method, url, body);
                if (a.status < 500)
                    return a;
            }
            catch {
                /* retried */
            }
            if (Date.now() > untilMs)
                throw new Error(`${method} ${url}: no answer below 500 in time`);
            await sleep(100 + Math.random() * 200);
        }
    }
}
// ---------------------------------------------------------------------------------------------
// load
let producing = true;
let working = true;
let pgDown = false;
let pgBackAt = 0;
let jobSeq = 0;
let leasesInFlight = 0;
function jobBody() {
    const n = jobSeq++;
    const r = Math.random();
    const failTimes = r < 0.7 ? 0 : r < 0.9 ? 1 : 2;
    return { type: 'chaos.work', args: { n, failTimes }, maxAttempts: 10 };
}
async function producer(p) {
    const client = new Client(p);
    while (producing) {
        try {
            if (Math.random() < 0.5) {
                const a = await client.try('POST', '/jobs', jobBody());
                if (a.status === 201) {
                    accepted.add(String(a.body.id));
                    figures.accepted++;
                }
                else
                    figures.producerFailures++;
            }
            else {
                const jobs = Array.from({ length: 10 + Math.floor(Math.random() * 20) }, jobBody);
                const a = await client.try('POST', '/jobs/batch', { jobs });
                if (a.status === 201) {
                    for (const j of a.body.jobs)
                        accepted.add(String(j.id));
                    figures.accepted += a.body.jobs.length;
                }
                else
                    figures.producerFailures++;
            }
        }
        catch {
            figures.producerFailures++;
        }
        await sleep(80 + Math.random() * 80);
    }
}
async function worker(w) {
    const client = new Client(w);
    const bulk = w % 2 === 0;
    while (working) {
        let a;
        leasesInFlight++;
        try {
            a = await client.try('POST', '/jobs/next', {
                worker: `chaos-w${w}`,
                types: ['chaos.work', 'chaos.tick'],
                wait: '3s',
                lease: LEASE,
                limit: bulk ? 10 : 3,
            });
        }
        catch {
            await sleep(200);
            continue;
        }
        finally {
            leasesInFlight--;
        }
        if (a.status === 204)
            continue;
        if (a.status !== 200) {
            await sleep(200 + Math.random() * 200);
            continue;
        }
        if (figures.recoveryMs === null && pgBackAt > 0)
            figures.recoveryMs = Date.now() - pgBackAt;
        const jobs = a.body.jobs;
        figures.leases++;
        figures.leasedJobs += jobs.length;
        await sleep(Math.random() * 60); // the work
        const live = [];
        for (const job of jobs) {
            if (Math.random() < 0.2) {
                const hb = await client.call('POST', `/jobs/${job.id}/heartbeat`, { leaseToken: job.leaseToken }).catch(() => null);
                if (hb?.status === 409) {
                    figures.heartbeat409++;
                    continue;
                }
            }
            live.push(job);
        }
        const outcome = (job) => (job.attempts <= (job.args?.failTimes ?? 0) ? 'failed' : 'finished');
        const noted = (job, status) => {
            if (status === 409)
                figures.report409++;
            else if (status === 200 && outcome(job) === 'finished') {
                finished200.set(job.id, (finished200.get(job.id) ?? 0) + 1);
                figures.finishOk++;
            }
            else if (status === 200)
                figures.failReports++;
            else
                violations.push(`report of job ${job.id} answered ${status}`);
        };
        if (bulk && live.length > 0) {
            let pending = live;
            for (let round = 0; pending.length > 0 && round < 200; round++) {
                const reports = pending.map((job) => outcome(job) === 'finished'
                    ? { id: job.id, leaseToken: job.leaseToken, outcome: 'finished', result: { by: w } }
                    : { id: job.id, leaseToken: job.leaseToken, outcome: 'failed', error: 'planned failure', retryIn: '300ms' });
                const r = await client.call('POST', '/jobs/reports', { reports }).catch(() => null);
                if (!r)
                    break;
                if (r.status !== 200) {
                    violations.push(`POST /jobs/reports answered ${r.status}: ${JSON.stringify(r.body).slice(0, 300)}`);
                    break;
                }
                const again = [];
                r.body.results.forEach((res, i) => {
                    if (res.status >= 500)
                        again.push(pending[i]);
                    else
                        noted(pending[i], res.status);
                });
                pending = again;
                if (pending.length > 0)
                    await sleep(200);
            }
        }
        else {
            for (const job of live) {
                const r = outcome(job) === 'finished'
                    ? await client.call('POST', `/jobs/${job.id}/finished`, { leaseToken: job.leaseToken, result: { by: w } }).catch(() => null)
                    : await client
                        .call('POST', `/jobs/${job.id}/failed`, { leaseToken: job.leaseToken, error: 'planned failure', retryIn: '300ms' })
                        .catch(() => null);
                if (r)
                    noted(job, r.status);
            }
        }
    }
}
// ---------------------------------------------------------------------------------------------
// faults
let server;
let pgPort = 0;
let pgDataDir = '';
const PG_SETTINGS = { fsync: 'off', synchronous_commit: 'off', max_connections: '200' };
async function terminateBackends(observer) {
    if (pgDown)
        return;
    try {
        const { rows } = await observer.query(`SELECT pid FROM pg_stat_activity
        WHERE datname = current_database() AND application_name LIKE 'jobclock%' AND pid <> pg_backend_pid()
        ORDER BY random() LIMIT $1`, [1 + Math.floor(Math.random() * 3)]);
        for (const { pid } of rows) {
            const t = await observer.query('SELECT pg_terminate_backend($1) AS ok', [pid]);
            if (t.rows[0]?.ok)
                figures.terminatedBackends++;
        }
        figures.terminations++;
    }
    catch {
        /* the observer's own connection was cut by a restart: next time */
    }
}
async function restartPostgres() {
    figures.longPollsHeld = leasesInFlight;
    log(`stopping PostgreSQL with ${leasesInFlight} lease requests in flight`);
    pgDown = true;
    const t0 = Date.now();
    await server.stop();
    await sleep(Math.min(5_000, Math.max(2_000, SECONDS * 50)));
    server = await startEmbedded({ dataDir: pgDataDir, port: pgPort, settings: PG_SETTINGS });
    pgBackAt = Date.now();
    figures.pgDownMs = pgBackAt - t0;
    pgDown = false;
    figures.pgRestarts++;
    log(`PostgreSQL back after ${figures.pgDownMs} ms`);
}
const samples = [];
async function sample(startedAt) {
    const rssMb = [];
    const lagP99Ms = [];
    for (const i of instances) {
        const text = await fetch(`http://127.0.0.1:${i.port}/metrics`, { signal: AbortSignal.timeout(5_000) })
            .then((r) => r.text())
            .catch(() => '');
        const metric = (name) => {
            const m = new RegExp(`^${name} ([0-9.e+-]+)$`, 'm').exec(text);
            return m ? Number(m[1]) : null;
        };
        const rss = metric('jobclock_process_resident_memory_bytes');
        const lag = metric('jobclock_nodejs_eventloop_lag_p99_seconds');
        rssMb.push(rss === null ? null : Math.round(rss / 1e5) / 10);
        lagP99Ms.push(lag === null ? null : Math.round(lag * 1e4) / 10);
    }
    samples.push({ at: Math.round((Date.now() - startedAt) / 1000), rssMb, lagP99Ms });
}
/** Least-squares slope of RSS over time, in MB a minute. */
function slope(points) {
    const n = points.length;
    if (n < 2)
        return 0;
    const mx = points.reduce((s, [x]) => s + x, 0) / n;
    const my = points.reduce((s, [, y]) => s + y, 0) / n;
    const num = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
    const den = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
    return den === 0 ? 0 : (num / den) * 60;
}
function soakReport() {
    const names = instances.map((i) => i.name);
    const lines = [['t (s)', ...names.map((n) => `${n} RSS MB / lag p99 ms`)]];
    for (const s of samples)
        lines.push([String(s.at), ...names.map((_, k) => `${s.rssMb[k] ?? '-'} / ${s.lagP99Ms[k] ?? '-'}`)]);
    const widths = lines[0].map((_, c) => Math.max(...lines.map((l) => l[c].length)));
    const table = lines.map((l) => l.map((v, c) => v.padStart(widths[c])).join('  ')).join('\n');
    const third = Math.max(2, Math.floor(samples.length / 3));
    const verdicts = names.map((name, k) => {
        const pts = samples.filter((s) => s.rssMb[k] != null).map((s) => [s.at, s.rssMb[k]]);
        const first = slope(pts.slice(0, third));
        const last = slope(pts.slice(-third));
        const levelled = last < 1 || last < first / 4;
        return `${name}: RSS slope ${first.toFixed(2)} MB/min in the first third, ${last.toFixed(2)} MB/min in the last: ${levelled ? 'levelled off' : 'STILL GROWING'}`;
    });
    return `${table}\n${verdicts.join('\n')}\n`;
}
async function soak(startedAt) {
    while (Date.now() - startedAt < SECONDS * 1000) {
        await sample(startedAt);
        await sleep(10_000 - ((Date.now() - startedAt) % 10_000));
    }
    await sample(startedAt);
}
async function faults(observer, startedAt) {
    if (SOAK)
        return soak(startedAt);
    const ms = SECONDS * 1000;
    const plan = [
        { at: 0.3 * ms, done: false, run: () => killInstance() },
        { at: 0.45 * ms, done: false, run: () => startInstance(`instance-${instances.length + 1}`).then(() => log('replacement started')) },
        { at: 0.6 * ms, done: false, run: () => restartPostgres() },
        { at: 0.8 * ms, done: false, run: () => stopInstance() },
    ];
    let nextCut = startedAt + 2_000;
    const running = []; // the cuts go on while an instance starts
    while (Date.now() - startedAt < ms) {
        for (const step of plan) {
            if (!step.done && Date.now() - startedAt >= step.at) {
                step.done = true;
                running.push(step.run());
            }
        }
        if (Date.now() >= nextCut) {
            await terminateBackends(observer);
            nextCut = Date.now() + CUT_EVERY_MS * (0.6 + Math.random() * 0.8);
        }
        await sleep(100);
    }
    await Promise.all(running);
}
/** A graceful stop under load: SIGTERM must end the process with 0 within 10 s. */
async function stopInstance() {
    const victim = alive()[0];
    log(`SIGTERM ${victim.name}`);
    victim.killed = true;
    const t0 = Date.now();
    victim.child.kill('SIGTERM');
    const code = await victim.exited;
    figures.stopMs = Date.now() - t0;
    figures.instanceStops++;
    if (code !== 0)
        violations.push(`${victim.name} exited with ${code} after SIGTERM`);
    if (figures.stopMs > 10_000)
        violations.push(`${victim.name} took ${figures.stopMs} ms to stop after SIGTERM`);
}
async function killInstance() {
    const victim = alive()[1];
    log(`SIGKILL ${victim.name}`);
    victim.killed = true;
    victim.child.kill('SIGKILL');
    await victim.exited;
    figures.instanceKills++;
}
// ---------------------------------------------------------------------------------------------
// checks
async function check(observer) {
    const { rows } = await observer.query(`SELECT id::text, state, type, periodic_task_id AS task, scheduled_at AS slot,
            CASE WHEN state = 'failed' THEN left(coalesce(error->>'message', error #>> '{}'), 60) END AS why
       FROM job`);
    const reasons = new Map();
    for (const r of rows)
        if (r.why !== null)
            reasons.set(r.why, (reasons.get(r.why) ?? 0) + 1);
    for (const [why, n] of reasons)
        log(`failed ×${n}: ${why}`);
    const byId = new Map(rows.map((r) => [r.id, r]));
    let lost = 0;
    for (const id of accepted) {
        const row = byId.get(id);
        if (row?.state !== 'finished') {
            lost++;
            if (lost <= 10)
                violations.push(`job ${id} answered 201 is ${row ? row.state : 'missing'}`);
        }
    }
    const doubled = [...finished200.values()].filter((n) => n > 1).length;
    if (doubled > 0)
        violations.push(`${doubled} jobs got more than one 200 to a finish report`);
    let finishedButNot = 0;
    for (const id of finished200.keys())
        if (byId.get(id)?.state !== 'finished')
            finishedButNot++;
    if (finishedButNot > 0)
        violations.push(`${finishedButNot} jobs whose finish was answered 200 are not finished`);
    const open = rows.filter((r) => r.state === 'queued' || r.state === 'running').length;
    if (open > 0)
        violations.push(`${open} jobs still queued or running after the drain`);
    const work = rows.filter((r) => r.type === 'chaos.work');
    const unacknowledged = work.filter((r) => !accepted.has(r.id)).length;
    const workNotFinished = work.filter((r) => r.state !== 'finished').length;
    if (workNotFinished > 0)
        violations.push(`${workNotFinished} chaos.work jobs are not finished`);
    // periodic: one job per slot, every slot on the schedule's grid
    const ticks = rows.filter((r) => r.task !== null);
    const slots = new Set();
    let duplicateSlots = 0;
    let offGrid = 0;
    for (const t of ticks) {
        const key = `${t.task}@${t.slot?.toISOString()}`;
        if (slots.has(key))
            duplicateSlots++;
        slots.add(key);
        if (t.slot === null || (t.slot.getTime() - firstRunAt) % 2_000 !== 0)
            offGrid++;
    }
    // slots with no job: runs coalesced after an outage or a killed instance's marks (informational)
    const lastSlot = new Map();
    for (const t of ticks)
        if (t.slot)
            lastSlot.set(t.task, Math.max(lastSlot.get(t.task) ?? 0, t.slot.getTime()));
    const expectedSlots = [...lastSlot.values()].reduce((n, last) => n + (last - firstRunAt) / 2_000 + 1, 0);
    const missedSlots = expectedSlots - slots.size;
    if (duplicateSlots > 0)
        violations.push(`${duplicateSlots} periodic slots submitted twice`);
    if (offGrid > 0)
        violations.push(`${offGrid} periodic jobs off their schedule's slots`);
    const tickStates = new Map();
    for (const t of ticks)
        tickStates.set(t.state, (tickStates.get(t.state) ?? 0) + 1);
    for (const i of instances) {
        if (i.killed)
            continue;
        if (i.child.exitCode !== null)
            violations.push(`${i.name} exited (code ${i.child.exitCode}); see ${i.name}.log`);
        else {
            const r = await fetch(`http://127.0.0.1:${i.port}/readyz`).catch(() => null);
            if (r?.status !== 200)
                violations.push(`${i.name} /readyz answered ${r?.status ?? 'nothing'}`);
        }
    }
    return {
        jobsInDb: rows.length,
        workJobs: work.length,
        unacknowledged,
        lost,
        doubled,
        open,
        periodicJobs: ticks.length,
        periodicFinished: tickStates.get('finished') ?? 0,
        periodicFailed: tickStates.get('failed') ?? 0,
        periodicDropped: tickStates.get('dropped') ?? 0,
        duplicateSlots,
        missedSlots,
        finishedWithout200: work.filter((r) => r.state === 'finished' && !finished200.has(r.id)).length,
    };
}
// ---------------------------------------------------------------------------------------------
let firstRunAt = 0;
async function main() {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'jobclock-chaos-'));
    await chmod(tmp, 0o755);
    pgDataDir = path.join(tmp, 'pg');
    pgPort = await freePort();
    server = await startEmbedded({ dataDir: pgDataDir, port: pgPort, settings: PG_SETTINGS });
    dbUrl = await ensureDatabase(server.url, 'chaos');
    const observer = new pg.Pool({ connectionString: dbUrl, max: 2, application_name: 'chaos-observer' });
    observer.on('error', () => undefined);
    let code = 1;
    try {
        for (let i = 1; i <= INSTANCES; i++)
            await startInstance(`instance-${i}`);
        log(`${INSTANCES} instances ready on ${instances.map((i) => i.port).join(', ')}; PostgreSQL on ${pgPort}; logs in ${tmp}`);
        const admin = new Client(0);
        firstRunAt = Math.ceil((Date.now() + 3_000) / 1_000) * 1_000;
        for (let t = 0; t < TASKS; t++) {
            const a = await admin.call('POST', '/periodic-tasks', {
                id: `chaos-${t}`,
                task: 'chaos.tick',
                schedule: 'every 2s',
                firstRunAt: new Date(firstRunAt).toISOString(),
                args: { t },
            });
            if (a.status !== 201)
                throw new Error(`creating a periodic task answered ${a.status}: ${JSON.stringify(a.body)}`);
        }
        const startedAt = Date.now();
        const producers = Array.from({ length: 3 }, (_, p) => producer(p));
        const workers = Array.from({ length: WORKERS }, (_, w) => worker(w));
        await faults(observer, startedAt);
        producing = false;
        await Promise.all(producers);
        log(`load stopped after ${Math.round((Date.now() - startedAt) / 1000)} s; disabling the periodic tasks and draining`);
        for (let t = 0; t < TASKS; t++)
            await admin.call('PATCH', `/periodic-tasks/chaos-${t}`, { enabled: false });
        // drain: until nothing is queued or running (leases of lost answers expire after 5 s)
        const drainUntil = Date.now() + 90_000;
        for (;;) {
            const { rows } = await observer
                .query(`SELECT count(*)::int AS n FROM job WHERE state IN ('queued', 'running')`)
                .catch(() => ({ rows: [{ n: -1 }] }));
            if (rows[0].n === 0 || Date.now() > drainUntil)
                break;
            await sleep(500);
        }
        await sleep(6_000); // past the lease length: a late double would show now
        working = false;
        await Promise.all(workers);
        const result = await check(observer);
        const s5xx = [...figures.status5xx.entries()].map(([s, n]) => `${s}×${n}`).join(' ') || '0';
        const table = [
            ['seconds of load and faults', SECONDS],
            ['jobs answered 201', figures.accepted],
            ['jobs created, answer lost (no 201)', result.unacknowledged],
            ['producer requests without 201', figures.producerFailures],
            ['leases (jobs leased)', `${figures.leases} (${figures.leasedJobs})`],
            ['finish reports answered 200', figures.finishOk],
            ['planned failures reported', figures.failReports],
            ['reports answered 409 (lease lost)', figures.report409],
            ['heartbeats answered 409', figures.heartbeat409],
            [
                'periodic jobs (finished/failed/dropped)',
                `${result.periodicJobs} (${result.periodicFinished}/${result.periodicFailed}/${result.periodicDropped})`,
            ],
            ['backends terminated (rounds)', `${figures.terminatedBackends} (${figures.terminations})`],
            ['instances SIGKILLed / started', `${figures.instanceKills} / ${figures.instanceStarts}`],
            ['instances stopped with SIGTERM (ms to exit 0)', `${figures.instanceStops} (${figures.stopMs})`],
            ['PostgreSQL restarts (down ms, leases held)', `${figures.pgRestarts} (${figures.pgDownMs}, ${figures.longPollsHeld})`],
            ['first lease after PostgreSQL returned (ms)', figures.recoveryMs ?? 'none'],
            ['5xx seen by clients', s5xx],
            ['connection errors seen by clients', figures.connectionErrors],
            ['lost (201, not finished)', result.lost],
            ['finished twice (two 200s)', result.doubled],
            ['finished, 200 never received', result.finishedWithout200],
            ['stuck queued/running', result.open],
            ['periodic slots submitted twice', result.duplicateSlots],
            ['periodic slots coalesced (no job)', result.missedSlots],
            ['violations', violations.length],
        ];
        const width = Math.max(...table.map(([k]) => k.length));
        process.stdout.write(`\n${table.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n')}\n`);
        if (SOAK)
            process.stdout.write(`\n${soakReport()}`);
        for (const v of violations.slice(0, 30))
            process.stdout.write(`VIOLATION: ${v}\n`);
        const summary = {
            ...result,
            accepted: figures.accepted,
            terminatedBackends: figures.terminatedBackends,
            instanceKills: figures.instanceKills,
            instanceStops: figures.instanceStops,
            pgRestarts: figures.pgRestarts,
            recoveryMs: figures.recoveryMs,
            status5xx: Object.fromEntries(figures.status5xx),
            connectionErrors: figures.connectionErrors,
            violations: violations.length,
        };
        process.stdout.write(`CHAOS_RESULT ${JSON.stringify(summary)}\n`);
        code = violations.length === 0 ? 0 : 1;
    }
    catch (err) {
        process.stdout.write(`chaos run failed: ${err.stack}\n`);
        code = 1;
    }
    finally {
        working = false;
        producing = false;
        for (const i of instances)
            if (i.child.exitCode === null)
                i.child.kill('SIGTERM');
        await Promise.all(instances.map((i) => i.exited));
        await observer.end().catch(() => undefined);
        await server.stop().catch(() => undefined);
        if (process.env.CHAOS_KEEP === '1' || code !== 0)
            log(`kept ${tmp}`);
        else
            await rm(tmp, { recursive: true, force: true });
    }
    return code;
}
// Ctrl-C: stop the instances and the server this run started, then exit
for (const signal of ['SIGINT', 'SIGTERM']) {
    process.once(signal, () => {
        for (const i of instances)
            if (i.child.exitCode === null)
                i.child.kill('SIGKILL');
        void server
            ?.stop()
            .catch(() => undefined)
            .finally(() => process.exit(130));
    });
}
process.exitCode = await main();
//# sourceMappingURL=run.js.map