import { cpuPerJob, startCpuMeter } from './cpu.js';
export const scaled = (ctx, n, min = 1) => Math.max(min, Math.round(n * ctx.scale));
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** A throughput result: `done` of `n` jobs in `ms`, with the CPU each side spent per job. */
export function rate(done, ms, n, cpu = null) {
    const r = { value: (done * 1000) / ms, extra: { jobs: done, ms, ...cpuPerJob(cpu, done) } };
    if (done < n)
        r.note = `time-boxed: ${done} of ${n}`;
    return r;
}
/** Untimed warm-up before every throughput run: 1.5 s at full scale, at least 0.5 s. */
export const warmupMs = (ctx) => Math.max(500, Math.round(1_500 * ctx.scale));
/**
 * Runs the workload untimed first — JIT compilation, plan caches, pool connections: costs that a
 * long-running service paid long ago and that otherwise land in the first second of a 4-second
 * window — for `warmupMs` or until `warmupJobs` are done, then again, timed, until `timeboxMs` ends
 * or the work runs out. Every system gets the same warm-up. `phase(until)` works until
 * `until.deadline` or `until.jobs` (checked between its steps) or until nothing is left, and
 * returns how many jobs it completed.
 */
export async function warmThenTime(ctx, timeboxMs, phase, warmupJobs = Number.POSITIVE_INFINITY) {
    const w = await phase({ deadline: performance.now() + warmupMs(ctx), jobs: warmupJobs });
    const warmup = typeof w === 'number' ? w : w.done;
    const meter = startCpuMeter(ctx.host.tid);
    const started = performance.now();
    const r = await phase({ deadline: started + timeboxMs, jobs: Number.POSITIVE_INFINITY });
    const ms = (typeof r === 'number' ? performance.now() : r.endedAt) - started;
    return { done: typeof r === 'number' ? r : r.done, warmup, ms, cpu: meter.stop() };
}
/** A throughput result from a warmed-up run over a queue of `queued` jobs. */
export function timedRate(t, queued) {
    const r = rate(t.done, t.ms, queued - t.warmup, t.cpu);
    r.extra = { ...r.extra, warmupJobs: t.warmup };
    return r;
}
//# sourceMappingURL=context.js.map