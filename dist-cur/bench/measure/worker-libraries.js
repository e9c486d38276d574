/**
 * (k) The Python and Go worker libraries against the README loop written by hand in the same
 * language: no-op jobs on b.loop's queue, each side in one process of its own (4 Workers × 100
 * slots, or 4 hand-written loops leasing 100 with `types` and `wait` and reporting them in one
 * POST /jobs/reports). bench/workers/ holds both sides of each language. Only these rows:
 * `BENCH_ONLY=k. npm run bench`.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { warmThenTime } from '../lib/context.js';
import { NotAvailable } from '../lib/http.js';
import { tokenOf } from '../lib/tokens.js';
import { checkedRate, processingTimeboxMs, warmupJobs } from './worker-protocol.js';
/** The checkout (this file runs from bench/measure or, compiled, from dist/bench/measure). */
const ROOT = (() => {
    let dir = path.dirname(fileURLToPath(import.meta.url));
    for (let i = 0; i < 6 && !existsSync(path.join(dir, 'bench', 'workers')); i++)
        dir = path.dirname(dir);
    return dir;
})();
/** Nothing is downloaded: the Go side uses the standard library and clients/go only. */
const GO_ENV = { ...process.env, GOFLAGS: '-mod=mod', GOPROXY: 'off', GOTOOLCHAIN: 'local', GOWORK: 'off' };
let goBinary = null;
/** The command that runs one side of a language; NotAvailable when its tool is missing. */
function command(language) {
    if (language === 'python') {
        if (spawnSync('python3', ['--version']).status !== 0)
            throw new NotAvailable('python3 is not installed');
        return {
            file: 'python3',
            args: [path.join(ROOT, 'bench/workers/python_worker.py')],
            env: { ...process.env, PYTHONPATH: path.join(ROOT, 'clients/python/src'), PYTHONDONTWRITEBYTECODE: '1' },
        };
    }
    if (!goBinary) {
        if (spawnSync('go', ['version']).status !== 0)
            throw new NotAvailable('go is not installed');
        const out = path.join(mkdtempSync(path.join(tmpdir(), 'jobclock-bench-go-')), 'workers');
        const built = spawnSync('go', ['build', '-o', out, '.'], { cwd: path.join(ROOT, 'bench/workers/go'), env: GO_ENV, encoding: 'utf8' });
        if (built.status !== 0)
            throw new Error(`go build of bench/workers/go failed: ${built.stderr}`);
        goBinary = out;
    }
    return { file: goBinary, args: [], env: process.env };
}
/** Runs one side until `max` jobs are finished or `ms` pass: its jobs and the ms of its work. */
function runSide(ctx, cmd, side, url, max, ms) {
    return new Promise((resolve, reject) => {
        const child = spawn(cmd.file, [...cmd.args, side, url, tokenOf('worker'), String(max), String(Math.round(ms))], {
            env: cmd.env,
            stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        let err = '';
        child.stdout.on('data', (b) => (out += b.toString()));
        child.stderr.on('data', (b) => (err += b.toString()));
        child.on('error', reject);
        child.on('exit', (code) => {
            if (err.trim() && code === 0)
                ctx.log(err.trim().split('\n').slice(-5).join('\n'));
            if (code !== 0)
                return reject(new Error(`${cmd.file} ${side} exited ${code}: ${err.slice(0, 2000)}`));
            try {
                resolve(JSON.parse(out.trim().split('\n').pop()));
            }
            catch {
                reject(new Error(`${cmd.file} ${side} printed no result: ${out.slice(-200)}`));
            }
        });
    });
}
function libraryProcessing(key, language, side) {
    return {
        key,
        guardMs: (ctx) => processingTimeboxMs(ctx) + 90_000,
        async run(ctx) {
            const cmd = command(language);
            const db = await ctx.server.createDatabase(await ctx.templates.jobclockJobs());
            try {
                const n = ctx.templates.jobs;
                const base = await ctx.host.open({ url: db.url, schedulerLoop: true });
                await db.settle();
                let finished = 0;
                const t = await warmThenTime(ctx, processingTimeboxMs(ctx), async (until) => {
                    const called = performance.now();
                    const max = Math.min(until.jobs, n - finished);
                    // the process's own clock, from its first request: its start-up (an interpreter's
                    // imports, say) is not the library's throughput
                    const r = await runSide(ctx, cmd, side, base, max, until.deadline - called);
                    finished += r.done;
                    return { done: r.done, endedAt: called + r.ms };
                }, warmupJobs(ctx));
                return await checkedRate(db, t, n, `select count(*)::int as n from job where state = 'finished'`, null, null);
            }
            finally {
                await ctx.host.close().catch(() => undefined);
                await db.retire();
            }
        },
    };
}
export const pythonLoop = libraryProcessing('k.python.loop', 'python', 'loop');
export const pythonWorker = libraryProcessing('k.python.worker', 'python', 'worker');
export const goLoop = libraryProcessing('k.go.loop', 'go', 'loop');
export const goWorker = libraryProcessing('k.go.worker', 'go', 'worker');
//# sourceMappingURL=worker-libraries.js.map