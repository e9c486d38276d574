import { type CpuSplit, cpuPerJob, startCpuMeter } from './cpu.js';
import type { JobclockHost } from './jobclock.js';
import type { BenchServer } from './postgres.js';
import type { Templates } from './templates.js';

export interface BenchContext {
  server: BenchServer;
  host: JobclockHost;
  templates: Templates;
  /** BENCH_SCALE: multiplies job counts, task counts and time boxes. */
  scale: number;
  /** BENCH_ROUNDS: measurements that pool samples over rounds spread their samples over them. */
  rounds: number;
  log(message: string): void;
}

/** What one measurement of one round produced. */
export interface UnitResult {
  /** The headline number: a rate (per second) or a latency (ms), per the row's unit. */
  value: number;
  /** Raw samples (latencies in ms), pooled across rounds for percentiles. */
  samples?: number[];
  /** Secondary figures shown in the JSON (and some in the table). */
  extra?: Record<string, number>;
  /** Said next to the number: e.g. that the run was time-boxed. */
  note?: string;
}

export interface Unit {
  key: string;
  run(ctx: BenchContext): Promise<UnitResult>;
  /** Upper bound on the whole unit, setup included; past it the unit is abandoned as n/a. */
  guardMs(ctx: BenchContext): number;
}

export const scaled = (ctx: BenchContext, n: number, min = 1) => Math.max(min, Math.round(n * ctx.scale));

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A throughput result: `done` of `n` jobs in `ms`, with the CPU each side spent per job. */
export function rate(done: number, ms: number, n: number, cpu: CpuSplit | null = null): UnitResult {
  const r: UnitResult = { value: (done * 1000) / ms, extra: { jobs: done, ms, ...cpuPerJob(cpu, done) } };
  if (done < n) r.note = `time-boxed: ${done} of ${n}`;
  return r;
}

/** Untimed warm-up before every throughput run: 1.5 s at full scale, at least 0.5 s. */
export const warmupMs = (ctx: BenchContext) => Math.max(500, Math.round(1_500 * ctx.scale));

export interface Timed {
  /** Jobs the timed phase completed. */
  done: number;
  /** Jobs the warm-up completed (they are gone from the queue before the timing starts). */
  warmup: number;
  ms: number;
  cpu: CpuSplit | null;
}

/** How far one phase of a run may go: until `deadline` (performance.now()) or `jobs` done. */
export interface Until {
  deadline: number;
  jobs: number;
}

/**
 * What a phase did: a count of jobs, or the count and the moment its work ended, when what follows
 * it is shutting down rather than work (a worker's stop() letting a waiting long-poll go).
 */
export type PhaseResult = number | { done: number; endedAt: number };

/**
 * Runs the workload untimed first — JIT compilation, plan caches, pool connections: costs that a
 * long-running service paid long ago and that otherwise land in the first second of a 4-second
 * window — for `warmupMs` or until `warmupJobs` are done, then again, timed, until `timeboxMs` ends
 * or the work runs out. Every system gets the same warm-up. `phase(until)` works until
 * `until.deadline` or `until.jobs` (checked between its steps) or until nothing is left, and
 * returns how many jobs it completed.
 */
export async function warmThenTime(
  ctx: BenchContext,
  timeboxMs: number,
  phase: (until: Until) => Promise<PhaseResult>,
  warmupJobs = Number.POSITIVE_INFINITY,
): Promise<Timed> {
  const w = await phase({ deadline: performance.now() + warmupMs(ctx), jobs: warmupJobs });
  const warmup = typeof w === 'number' ? w : w.done;
  const meter = startCpuMeter(ctx.host.tid);
  const started = performance.now();
  const r = await phase({ deadline: started + timeboxMs, jobs: Number.POSITIVE_INFINITY });
  const ms = (typeof r === 'number' ? performance.now() : r.endedAt) - started;
  return { done: typeof r === 'number' ? r : r.done, warmup, ms, cpu: meter.stop() };
}

/** A throughput result from a warmed-up run over a queue of `queued` jobs. */
export function timedRate(t: Timed, queued: number): UnitResult {
  const r = rate(t.done, t.ms, queued - t.warmup, t.cpu);
  r.extra = { ...r.extra, warmupJobs: t.warmup };
  return r;
}
