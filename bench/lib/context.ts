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
