/**
 * (a) raw SQL claim-and-finish loops, (b) jobclock workers over HTTP, (c) pg-boss and
 * graphile-worker processing the same number of no-op jobs in-process.
 */
import { Worker } from '../../clients/typescript/src/index.js';
import { run as runGraphile018 } from 'graphile-worker-018';
import { PgBoss as PgBoss12 } from 'pg-boss-12';
import { spawn } from 'node:child_process';
import type pg from 'pg';
import { startCpuMeter } from '../lib/cpu.js';
import {
  type BenchContext,
  scaled,
  sleep,
  type Timed,
  timedRate,
  type Unit,
  type UnitResult,
  type Until,
  warmThenTime,
} from '../lib/context.js';
import { HttpClient, unexpected } from '../lib/http.js';
import { latencySummary } from '../lib/stats.js';
import { PGBOSS_QUEUE as QUEUE, pgBoss12Options, silentGraphileLogger018 } from '../lib/templates.js';
import { tokenOf } from '../lib/tokens.js';

/** Queued no-op jobs at the start of every processing measurement (the seeded templates hold them). */
export const processingJobs = (ctx: BenchContext) => scaled(ctx, 20_000, 200);
/** The first tenth of the queue (or 1.5 s, whichever comes first) is the warm-up. */
export const warmupJobs = (ctx: BenchContext) => Math.round(processingJobs(ctx) / 10);
export const processingTimeboxMs = (ctx: BenchContext) => Math.max(2_000, Math.round(4_000 * ctx.scale));

// ---------------------------------------------------------------------------------------------
// (a) raw SQL: FOR UPDATE SKIP LOCKED claim, then a compare-and-set finish, on jobclock's schema

export const CLAIM = `
  update job set state = 'running', attempts = attempts + 1, worker = $2, lease_token = gen_random_uuid(),
         lease_expires_at = now() + interval '30 seconds', started_at = now(), updated_at = now()
   where id in (select id from job where state = 'queued' and run_at <= now()
                 order by priority desc, run_at, id for update skip locked limit $1)
  returning id, lease_token`;
const FINISH_ONE = `
  update job set state = 'finished', finished_at = now(), updated_at = now()
   where id = $1 and lease_token = $2 and state = 'running'`;
export const FINISH_MANY = `
  update job j set state = 'finished', finished_at = now(), updated_at = now()
    from unnest($1::bigint[], $2::uuid[]) as r(id, token)
   where j.id = r.id and j.lease_token = r.token and j.state = 'running'`;

/**
 * One job per statement is bound by the disk's flush latency (two commits per job) and never
 * finishes the 20,000 jobs, so it gets half the time box: its rate is steady within a second.
 */
function rawProcessing(key: string, perStatement: number, connections: number): Unit {
  const timebox = (ctx: BenchContext) => (perStatement === 1 ? Math.max(1_500, processingTimeboxMs(ctx) / 2) : processingTimeboxMs(ctx));
  return {
    key,
    guardMs: (ctx) => processingTimeboxMs(ctx) + 60_000,
    async run(ctx) {
      const db = await ctx.server.createDatabase(await ctx.templates.jobclockJobs());
      const clients: pg.Client[] = [];
      try {
        const n = ctx.templates.jobs;
        await db.settle();
        for (let i = 0; i < connections; i++) clients.push(await db.client('bench-raw'));
        const t = await warmThenTime(
          ctx,
          timebox(ctx),
          async (until) => {
            let done = 0;
            await Promise.all(
              clients.map(async (c, i) => {
                const worker = `raw-${i}`;
                while (performance.now() < until.deadline && done < until.jobs) {
                  const { rows } = await c.query<{ id: string; lease_token: string }>(CLAIM, [perStatement, worker]);
                  if (rows.length === 0) return;
                  if (perStatement === 1) {
                    const res = await c.query(FINISH_ONE, [rows[0]!.id, rows[0]!.lease_token]);
                    done += res.rowCount ?? 0;
                  } else {
                    const res = await c.query(FINISH_MANY, [rows.map((r) => r.id), rows.map((r) => r.lease_token)]);
                    done += res.rowCount ?? 0;
                  }
                }
              }),
            );
            return done;
          },
          warmupJobs(ctx),
        );
        return timedRate(t, n);
      } finally {
        await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
        await db.retire();
      }
    },
  };
}

export const rawClaim1 = rawProcessing('a.raw1', 1, 8);
export const rawClaim100 = rawProcessing('a.raw100', 100, 4);

// ---------------------------------------------------------------------------------------------
// (b) jobclock over HTTP

export interface LeasedJob {
  id: string;
  leaseToken: string;
}

/** How a benchmark worker asks for jobs: the README's loop sends `types` and `wait`. */
interface LeaseStyle {
  types?: readonly string[];
  wait?: string;
}

/** What the queue looks like: jobs spread over groups, and a flow-control policy on the type. */
interface QueueShape {
  groups?: number;
  policy?: { concurrency?: number; rate?: string };
  /** Final jobs behind the queue (Templates.jobclockHistory): the table after months of work. */
  history?: (ctx: BenchContext) => number;
  /** Final jobs past the retention behind the queue, deleted by the RetentionCleaner while the loop runs. */
  expired?: (ctx: BenchContext) => number;
  /**
   * This many webhooks subscribed to job.finished, all to one local receiver that answers 204 at
   * once; the instance's DeliveryEngine sends them while the loop runs. Reports the deliveries a
   * second from the start of the timed phase until every delivery is delivered.
   */
  webhooks?: number;
  /** Sample the running count every 10 ms through the timed phase: it must never pass the limit. */
  sampleRunning?: boolean;
  /**
   * PATCH /groups-default with this concurrency before the loop; reports the share of time each
   * group that ran more than one job had one running (median and mean over groups) and how many
   * runs began before the run of their group before them ended (must be 0 at concurrency 1).
   */
  groupsDefault?: number;
  /** PATCH /groups-default with this rate before the loop (beside groupsDefault, if given). */
  groupsDefaultRate?: string;
  /**
   * The case found from outside (issue 30): a fresh database whose job table was never analyzed
   * (autovacuum off on it, as where analyze is off or has not come yet), on which the instance
   * first processes FRESH_WARM jobs, and which then grows by FRESH_HISTORY final jobs and the
   * queue (freshWarmThenGrow). `analyze`: ANALYZE job once grown, the row to compare with.
   */
  fresh?: { analyze: boolean };
  /** With history: leave the template's periodic tasks idle (due in a day) instead of coming due. */
  tasksIdle?: boolean;
  /**
   * The growth rows: this many queued jobs (instead of processingJobs) and a timed window of
   * `timeboxMs`, long enough to hold autovacuum runs and periodic submissions; the lease latency,
   * the periodic runs' lateness and autovacuum's work in the window are reported.
   */
  steady?: {
    queue: (ctx: BenchContext) => number;
    timeboxMs: (ctx: BenchContext) => number;
    /** Held to this many jobs a second (the 4 workers together) instead of as fast as they can. */
    pacePerSec?: number;
  };
}

/**
 * The rate of a timed run, after checking that the database holds as many finished jobs (`finishedSql`
 * counts them) as were reported, and that a sampled running count never passed `limit`.
 */
export async function checkedRate(
  db: { exec(text: string): Promise<{ rows: unknown[] }> },
  t: Timed,
  n: number,
  finishedSql: string,
  limit: number | null,
  sampled: Record<string, number> | null,
): Promise<UnitResult> {
  const inDb = ((await db.exec(finishedSql)).rows[0] as { n: number }).n;
  if (inDb !== t.warmup + t.done) throw new Error(`${t.warmup + t.done} jobs were reported finished but ${inDb} are`);
  const r = timedRate(t, n);
  if (sampled) {
    const most = sampled.runningMax;
    if (most !== undefined && limit !== null && most > limit)
      throw new Error(`${most} jobs were running at once under a limit of ${limit}`);
    r.extra = { ...r.extra, ...sampled };
  }
  return r;
}

/** PATCH /types/noop with `policy`, as an admin. */
/** The receiver's program: answers 204 at once, prints its port. */
const RECEIVER = `
const http = require('node:http');
const server = http.createServer((req, res) => { req.resume(); req.on('end', () => res.writeHead(204).end()); });
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
`;

/**
 * A receiver on 127.0.0.1 in a process of its own (as receivers are: not on the thread of the
 * benchmark's workers), and `n` webhooks subscribed to job.finished on it.
 */
async function startHooks(base: string, n: number): Promise<{ close(): Promise<void> }> {
  const child = spawn(process.execPath, ['-e', RECEIVER], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.stdout.once('data', (d: Buffer) => resolve(Number(String(d).trim())));
  });
  const url = `http://127.0.0.1:${port}/hook`;
  const admin = new HttpClient(base, tokenOf('admin'), 1);
  try {
    for (let i = 0; i < n; i++) {
      const res = await admin.request('POST', '/webhooks', { url, events: ['job.finished'] });
      if (res.status !== 201) throw unexpected('POST /webhooks', res);
    }
  } finally {
    admin.close();
  }
  return {
    close: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill();
      }),
  };
}

/** Delivered webhook deliveries, and those still pending. */
async function deliveryCounts(db: { exec(text: string): Promise<{ rows: unknown[] }> }): Promise<{ delivered: number; pending: number }> {
  const { rows } = await db.exec(
    `select count(*) filter (where status = 'delivered')::int as delivered,
            count(*) filter (where status = 'pending')::int
              + (select coalesce(sum(cardinality(subjects) * cardinality(webhook_ids)), 0)::int from webhook_event) as pending
       from webhook_delivery`,
  );
  return rows[0] as { delivered: number; pending: number };
}

async function setNoopPolicy(base: string, policy: Record<string, unknown>): Promise<void> {
  const admin = new HttpClient(base, tokenOf('admin'), 1);
  try {
    const res = await admin.request('PATCH', '/types/noop', policy);
    if (res.status !== 200) throw unexpected('PATCH /types/noop', res);
  } finally {
    admin.close();
  }
}

async function setGroupsDefault(base: string, body: { concurrency?: number | undefined; rate?: string | undefined }): Promise<void> {
  const admin = new HttpClient(base, tokenOf('admin'), 1);
  try {
    const res = await admin.request('PATCH', '/groups-default', body);
    if (res.status !== 200) throw unexpected('PATCH /groups-default', res);
  } finally {
    admin.close();
  }
}

/**
 * Per group that ran more than one job: the share of the time from its first start to its last end
 * in which one of its jobs was running (runs laid end to end), and the runs that began before the
 * one before them ended. At concurrency 1 that count must be 0.
 */
async function groupBusyShares(db: { exec(text: string): Promise<{ rows: unknown[] }> }, concurrency: number) {
  const { rows } = await db.exec(
    `with runs as (
       select group_, started_at, finished_at, lag(finished_at) over (partition by group_ order by started_at, id) as prev_end
         from job where type = 'noop' and state = 'finished'),
     g as (
       select group_, count(*) filter (where started_at < prev_end) as n_overlap,
              extract(epoch from sum(finished_at - started_at)) / nullif(extract(epoch from max(finished_at) - min(started_at)), 0) as busy
         from runs group by group_ having count(*) > 1)
     select coalesce(percentile_cont(0.5) within group (order by busy), 0)::float8 as "groupBusyMedian",
            coalesce(avg(busy), 0)::float8 as "groupBusyMean", coalesce(sum(n_overlap), 0)::int as "groupOverlaps",
            count(*)::int as "busyGroups" from g`,
  );
  const r = rows[0] as Record<string, number>;
  if (concurrency === 1 && r.groupOverlaps! > 0) throw new Error(`${r.groupOverlaps} runs began before their group's previous run ended`);
  return r;
}

/** Autovacuum's work on the job table so far: runs, and ms spent vacuuming and analyzing (0 before PostgreSQL 18). */
async function vacuumWork(db: { exec(text: string): Promise<{ rows: unknown[] }> }) {
  const { rows } = await db.exec(
    `select autovacuum_count::float8 as vacuums,
            coalesce((to_jsonb(s) ->> 'total_autovacuum_time')::float8, 0) as "vacuumMs",
            coalesce((to_jsonb(s) ->> 'total_autoanalyze_time')::float8, 0) as "analyzeMs"
       from pg_stat_user_tables s where relname = 'job'`,
  );
  return rows[0] as { vacuums: number; vacuumMs: number; analyzeMs: number };
}

const dbNow = async (db: { exec(text: string): Promise<{ rows: unknown[] }> }) =>
  ((await db.exec(`select now() as t`)).rows[0] as { t: Date }).t;

/**
 * The periodic runs due since `since` (up to now): how many were submitted, and the p99 of their
 * lateness, as job.created_at − slot and as the commit of the job's INSERT − slot (ms).
 */
async function latenessSince(db: { exec(text: string, values?: unknown[]): Promise<{ rows: unknown[] }> }, since: Date) {
  const { rows } = await db.exec(
    `select count(*)::int as runs,
            coalesce(percentile_cont(0.99) within group (order by extract(epoch from created_at - scheduled_at) * 1000), 0)::float8 as p99,
            coalesce(percentile_cont(0.99) within group (order by extract(epoch from pg_xact_commit_timestamp(xmin) - scheduled_at) * 1000), 0)::float8 as "commitP99"
       from job where periodic_task_id is not null and scheduled_at >= $1 and scheduled_at <= now() - interval '200 ms'`,
    [since],
  );
  return rows[0] as { runs: number; p99: number; commitP99: number };
}

/**
 * Samples pg_stat_progress_vacuum every 250 ms until stopped: the share of samples in which a
 * vacuum of the job table was running, and of those, the share in each phase.
 */
function vacuumSampler(db: { exec(text: string): Promise<{ rows: unknown[] }> }) {
  let on = true;
  let samples = 0;
  const phases: Record<string, number> = {};
  const loop = (async () => {
    while (on) {
      const { rows } = await db.exec(
        `select p.phase from pg_stat_progress_vacuum p where p.datid = (select oid from pg_database where datname = current_database())
            and p.relid = 'job'::regclass`,
      );
      samples++;
      for (const r of rows as { phase: string }[]) phases[r.phase] = (phases[r.phase] ?? 0) + 1;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  })();
  return async (): Promise<Record<string, number>> => {
    on = false;
    await loop;
    const busy = Object.values(phases).reduce((a, b) => a + b, 0);
    const out: Record<string, number> = { vacuumBusyShare: samples ? busy / samples : 0 };
    for (const [phase, n] of Object.entries(phases)) out[`vacuumPhase.${phase}`] = samples ? n / samples : 0;
    return out;
  };
}

/** Final jobs past the 7-day retention still in the table. */
async function expiredLeft(db: { exec(text: string): Promise<{ rows: unknown[] }> }): Promise<number> {
  const { rows } = await db.exec(
    `select count(*)::int as n from job where state in ('finished', 'failed', 'dropped', 'cancelled') and finished_at < now() - interval '7 days'`,
  );
  return (rows[0] as { n: number }).n;
}

/** Samples how many jobs are running until stopped: the most seen, the mean, and the share of samples at `limit`. */
function runningSampler(db: { exec(text: string): Promise<{ rows: unknown[] }> }, limit: number) {
  let on = true;
  let max = 0;
  let atLimit = 0;
  let samples = 0;
  let sum = 0;
  const loop = (async () => {
    while (on) {
      const { rows } = await db.exec(`select count(*)::int as n from job where state = 'running'`);
      const n = (rows[0] as { n: number }).n;
      max = Math.max(max, n);
      samples++;
      sum += n;
      if (n === limit) atLimit++;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  })();
  return async () => {
    on = false;
    await loop;
    return {
      runningMax: max,
      runningMean: samples ? sum / samples : 0,
      runningAtLimitShare: samples ? atLimit / samples : 0,
      runningSamples: samples,
    };
  };
}

export async function lease(
  client: HttpClient,
  worker: string,
  limit: number,
  style: LeaseStyle,
  signal?: AbortSignal,
): Promise<LeasedJob[]> {
  let res;
  try {
    res = await client.post('/jobs/next', { worker, limit, ...style }, signal);
  } catch (err) {
    if (signal?.aborted) return []; // the run is over: a parked long-poll is let go
    throw err;
  }
  if (res.status === 204) return [];
  if (res.status !== 200) throw unexpected('POST /jobs/next', res);
  const jobs = (res.body as { jobs?: LeasedJob[] }).jobs;
  if (!Array.isArray(jobs)) throw new Error('POST /jobs/next: 200 without a jobs array');
  return jobs;
}

/**
 * jobclock's worker protocol: 4 workers lease 100 at a time and report through /jobs/reports (or
 * one /finished per job). With `wait`, a worker whose lease comes back empty parks in the
 * long-poll like a real worker; the run ends when every queued job is finished, and the requests
 * still parked then are aborted (their time is not counted: the last report ends the run).
 */
export function jobclockProcessing(
  key: string,
  mode: 'reports' | 'per-job' | 'per-job-minimal',
  style: LeaseStyle = {},
  shape: QueueShape = {},
): Unit {
  const leaseLoops = 4;
  const reportSockets = 48;
  return {
    key,
    guardMs: (ctx) => (shape.steady ? shape.steady.timeboxMs(ctx) : processingTimeboxMs(ctx)) + 60_000,
    async run(ctx) {
      const queue = shape.steady ? shape.steady.queue(ctx) : ctx.templates.jobs;
      const template = shape.fresh
        ? ctx.templates.jobclockNeverAnalyzed()
        : shape.history
          ? ctx.templates.jobclockHistory(shape.history(ctx), queue)
          : shape.expired
            ? ctx.templates.jobclockExpired(shape.expired(ctx), queue)
            : ctx.templates.jobclockJobs(shape.groups, queue);
      const db = await ctx.server.createDatabase(await template);
      let leaser: HttpClient | null = null;
      let reporter: HttpClient | null = null;
      let hooks: { close(): Promise<void> } | null = null;
      try {
        const n = queue;
        // the copy of the template is on disk before the loop starts, not written out during its window
        const syncMs = await db.written();
        if (syncMs > 1_000) ctx.log(`${key}: waited ${(syncMs / 1000).toFixed(1)} s for the copied database to be written out`);
        if (process.env.BENCH_JOB_AUTOVACUUM === 'off') await db.exec(`alter table job set (autovacuum_enabled = false)`); // diagnosis only
        const setup = process.env.BENCH_SETUP_SQL; // diagnosis only: e.g. alter table job set (autovacuum_vacuum_threshold = 200000)
        if (setup) await db.exec(setup);
        if (shape.history && !shape.tasksIdle) {
          // the growth template's 100,000 periodic tasks come due over the next 10 minutes, from
          // 2 s on: some 170 submissions a second beside the loop, each one's lateness measured
          await db.exec(
            `update periodic_task set nextrun = date_trunc('second', now()) + interval '2 s' + (substring(id from 8)::int % 600) * interval '1 s'
              where id like 'growth-%'`,
          );
          // that rewrote 100,000 rows at once, which no scheduler does: clear them now, or the
          // window would hold the vacuum of this set-up instead of the steady load
          await db.exec('vacuum periodic_task');
        }
        if (shape.fresh) await db.exec(`alter table job set (autovacuum_enabled = false)`);
        const base = await ctx.host.open({ url: db.url, schedulerLoop: true, retention: shape.expired !== undefined });
        if (shape.fresh) await freshWarmThenGrow(ctx, db, base, queue, shape.fresh.analyze);
        else await db.settle();
        if (shape.policy) await setNoopPolicy(base, shape.policy);
        if (shape.groupsDefault !== undefined || shape.groupsDefaultRate !== undefined)
          await setGroupsDefault(base, { concurrency: shape.groupsDefault, rate: shape.groupsDefaultRate });
        if (shape.webhooks) hooks = await startHooks(base, shape.webhooks);
        leaser = new HttpClient(base, tokenOf('worker'), leaseLoops);
        reporter = mode === 'reports' ? leaser : new HttpClient(base, tokenOf('worker'), reportSockets);
        const rep = reporter;
        const lsr = leaser;
        let finished = 0; // over both phases: the run is over when it reaches n
        const limit = shape.sampleRunning ? (shape.policy?.concurrency ?? null) : null;
        const sampled: { value: Record<string, number> | null } = { value: null };
        const timeboxMs = shape.steady ? shape.steady.timeboxMs(ctx) : processingTimeboxMs(ctx);
        const t = await warmThenTime(
          ctx,
          timeboxMs,
          async (until) => {
            let done = 0;
            const over = new AbortController();
            const stopSampling = limit !== null && until.jobs === Number.POSITIVE_INFINITY ? runningSampler(db, limit) : null;
            const timed = until.jobs === Number.POSITIVE_INFINITY;
            const expiredAtStart = shape.expired && timed ? await expiredLeft(db) : null;
            const steady = shape.steady !== undefined && timed;
            const vacuumAtStart = steady ? await vacuumWork(db) : null;
            const leaseMs: number[] | null = steady ? [] : null;
            const windowStart = steady ? await dbNow(db) : null;
            const stopVacuumSampler = steady ? vacuumSampler(db) : null;
            const deliveredAtStart = hooks && timed ? (await deliveryCounts(db)).delivered : null;
            const phaseStart = performance.now();
            const more = () => performance.now() < until.deadline && done < until.jobs && finished < n;
            const count = (k: number) => {
              done += k;
              finished += k;
              // Every job is finished: a worker parked in a long-poll can only get nothing now. (Not
              // at the end of the warm-up: a lease in flight would be cut off with jobs in it.)
              if (finished >= n) over.abort();
            };
            await Promise.all(
              Array.from({ length: leaseLoops }, async (_, i) => {
                const worker = `bench-worker-${i}`;
                const pace = timed ? shape.steady?.pacePerSec : undefined;
                // paced workers are spread over the period, as independent workers would be
                let next = performance.now() + (pace ? (i * 100 * 1000) / pace : 0);
                while (more()) {
                  if (pace) {
                    // each worker takes a batch of 100 every 400,000 / pace ms
                    const wait = next - performance.now();
                    next += (100 * leaseLoops * 1000) / pace;
                    if (wait > 0) await sleep(wait);
                  }
                  const asked = performance.now();
                  const jobs = await lease(lsr, worker, 100, style, style.wait ? over.signal : undefined);
                  if (jobs.length === 0) return;
                  leaseMs?.push(performance.now() - asked); // leases that found jobs: the statement, not a wait
                  if (mode === 'reports') {
                    const res = await rep.post('/jobs/reports', {
                      reports: jobs.map((j) => ({ id: j.id, leaseToken: j.leaseToken, outcome: 'finished' })),
                    });
                    if (res.status !== 200) throw unexpected('POST /jobs/reports', res);
                    const results = (res.body as { results?: { status: number }[] }).results ?? [];
                    const ok = results.filter((r) => r.status === 200).length;
                    if (ok !== jobs.length) throw new Error(`POST /jobs/reports: ${jobs.length - ok} of ${jobs.length} reports not 200`);
                    count(ok);
                  } else {
                    await Promise.all(
                      jobs.map(async (j) => {
                        const minimal = mode === 'per-job-minimal';
                        const res = await rep.post(
                          `/jobs/${encodeURIComponent(j.id)}/finished`,
                          { leaseToken: j.leaseToken },
                          undefined,
                          minimal ? { prefer: 'return=minimal' } : undefined,
                        );
                        if (res.status !== (minimal ? 204 : 200)) throw unexpected('POST /jobs/{id}/finished', res);
                        count(1);
                      }),
                    );
                  }
                }
              }),
            );
            if (stopSampling) sampled.value = await stopSampling();
            // the loop's own time: what follows (the deliveries sent on after it) is not in its rate
            const loopEndedAt = performance.now();
            if (timed && finished < n && performance.now() >= until.deadline) {
              // time-boxed: where the jobs that were not finished are (diagnosis of a stalled run)
              const left = await db.exec(
                `select state, attempts, count(*)::int as n, min(lease_expires_at) as expires from job where type = 'noop' and state <> 'finished' group by 1, 2`,
              );
              ctx.log(`${key}: time-boxed with ${n - finished} left: ${JSON.stringify(left.rows)}`);
            }
            if (deliveredAtStart !== null) {
              // the loop is done: the deliveries it caused are sent on, then counted
              const loopMs = loopEndedAt - phaseStart;
              let c = await deliveryCounts(db);
              const pendingAtLoopEnd = c.pending;
              const deliveredAtLoopEnd = c.delivered;
              const drainStart = performance.now();
              const draining = process.env.BENCH_DELIVERIES !== 'off'; // off: no engine runs (bench/jobclock-host.ts)
              while (draining && c.pending > 0 && performance.now() - phaseStart < loopMs + 120_000) {
                await sleep(50);
                c = await deliveryCounts(db);
              }
              sampled.value = {
                ...sampled.value,
                deliveriesPerSec: ((c.delivered - deliveredAtStart) * 1000) / (performance.now() - phaseStart),
                deliveriesPendingAtLoopEnd: pendingAtLoopEnd,
                // the engine at full speed once the workers stopped (no budget then)
                deliveriesDrainPerSec: ((c.delivered - deliveredAtLoopEnd) * 1000) / (performance.now() - drainStart),
                deliveriesPendingAfter: c.pending,
              };
            }
            if (vacuumAtStart !== null && leaseMs !== null && windowStart !== null) {
              // what autovacuum did on the job table during the timed window (PostgreSQL 18's counters),
              // the lease's latency, and the lateness of the periodic runs due in the window
              const end = await vacuumWork(db);
              const leases = latencySummary(leaseMs);
              const late = await latenessSince(db, windowStart);
              const vacuumShares = await stopVacuumSampler!();
              sampled.value = {
                ...sampled.value,
                autovacuums: end.vacuums - vacuumAtStart.vacuums,
                autovacuumMs: end.vacuumMs - vacuumAtStart.vacuumMs,
                autoanalyzeMs: end.analyzeMs - vacuumAtStart.analyzeMs,
                leaseP50: leases.p50,
                leaseP99: leases.p99,
                periodicRuns: late.runs,
                latenessP99: late.p99,
                latenessCommitP99: late.commitP99,
                ...vacuumShares,
              };
            }
            if (expiredAtStart !== null) {
              const left = await expiredLeft(db);
              sampled.value = {
                ...sampled.value,
                expiredDeletedPerSec: ((expiredAtStart - left) * 1000) / (performance.now() - phaseStart),
                expiredLeft: left,
              };
            }
            // with webhooks, the phase waited for their deliveries after the loop ended (above): the rate
            // is the loop's, not the loop's and the drain's (it was, before 2026-11-26: 0.08–0.12×)
            return deliveredAtStart === null ? done : { done, endedAt: loopEndedAt };
          },
          warmupJobs(ctx),
        );
        if (process.env.BENCH_STATEMENTS) ctx.log(`${key}: top statements\n${await db.topStatements()}`);
        if (shape.groupsDefault !== undefined) sampled.value = { ...sampled.value, ...(await groupBusyShares(db, shape.groupsDefault)) };
        return await checkedRate(
          db,
          t,
          n,
          `select count(*)::int as n from job where state = 'finished' and type = 'noop'`,
          limit,
          sampled.value,
        );
      } finally {
        leaser?.close();
        if (reporter !== leaser) reporter?.close();
        await ctx.host.close().catch(() => undefined);
        await hooks?.close();
        await db.retire();
      }
    },
  };
}

/** Jobs the instance processes on the empty table before it grows (fresh rows). */
export const FRESH_WARM = (ctx: BenchContext) => scaled(ctx, 2_000, 200);
/** Final jobs the fresh rows' table then grows by, beside the queue: 62,000 rows in all. */
export const FRESH_HISTORY = (ctx: BenchContext) => scaled(ctx, 40_000, 400);

/**
 * The fresh rows' set-up: FRESH_WARM jobs through the API on the empty table (POST /jobs/batch,
 * leases of 100, one POST /jobs/{id}/finished per job over 48 connections: every protocol
 * connection prepares its statements then), then FRESH_HISTORY final jobs and `queue` queued ones
 * inserted as plain rows; with `analyze`, ANALYZE job; a checkpoint, written out, before timing.
 */
async function freshWarmThenGrow(
  ctx: BenchContext,
  db: { exec(text: string, values?: unknown[]): Promise<{ rows: unknown[] }>; written(): Promise<number> },
  base: string,
  queue: number,
  analyze: boolean,
): Promise<void> {
  const warm = FRESH_WARM(ctx);
  const producer = new HttpClient(base, tokenOf('producer'), 1);
  const worker = new HttpClient(base, tokenOf('worker'), 48);
  try {
    for (let done = 0; done < warm; done += 1_000) {
      // another type than the queue's, so that the finished count of checkedRate is the queue's alone
      const jobs = Array.from({ length: Math.min(1_000, warm - done) }, (_, k) => ({ type: 'warm', args: { n: done + k } }));
      const res = await producer.post('/jobs/batch', { jobs }, undefined, { prefer: 'return=minimal' });
      if (res.status !== 201) throw unexpected('POST /jobs/batch', res);
    }
    await Promise.all(
      Array.from({ length: 4 }, async (_, i) => {
        for (;;) {
          const jobs = await lease(worker, `bench-fresh-${i}`, 100, {});
          if (jobs.length === 0) return;
          await Promise.all(
            jobs.map(async (j) => {
              const res = await worker.post(`/jobs/${encodeURIComponent(j.id)}/finished`, { leaseToken: j.leaseToken });
              if (res.status !== 200) throw unexpected('POST /jobs/{id}/finished', res);
            }),
          );
        }
      }),
    );
  } finally {
    producer.close();
    worker.close();
  }
  await db.exec(
    `insert into job (type, group_, args, run_at, state, attempts, started_at, finished_at, worker, updated_at)
     select 'history', 'default', jsonb_build_object('n', g), now() - interval '1 hour', 'finished', 1,
            now() - interval '1 hour', now() - interval '59 minutes', 'history', now() - interval '59 minutes'
     from generate_series(1, $1::int) g`,
    [FRESH_HISTORY(ctx)],
  );
  await db.exec(
    `insert into job (type, group_, args, run_at) select 'noop', 'default', jsonb_build_object('n', g), now() from generate_series(1, $1::int) g`,
    [queue],
  );
  if (analyze) await db.exec('analyze job');
  await ctx.server.admin((a) => a.query('checkpoint'));
  await db.written();
}

/** The README's worker loop: types and wait together, limit 100, reports through /jobs/reports. */
export const jobclockLoop = jobclockProcessing('b.loop', 'reports', { types: ['noop'], wait: '30s' });
export const jobclockTypes = jobclockProcessing('b.types', 'reports', { types: ['noop'] });
export const jobclockWait = jobclockProcessing('b.wait', 'reports', { wait: '30s' });
export const jobclockReports = jobclockProcessing('b.reports', 'reports');
export const jobclockPerJob = jobclockProcessing('b.perjob', 'per-job');
/** The same with `Prefer: return=minimal` on each report: 204, no job read back or sent. */
export const jobclockPerJobMinimal = jobclockProcessing('b.perjobmin', 'per-job-minimal');
/** The README loop with 3 webhooks subscribed to job.finished, delivered to a local receiver meanwhile. */
export const jobclockHooks3 = jobclockProcessing('b.hooks3', 'reports', { types: ['noop'], wait: '30s' }, { webhooks: 3 });
/**
 * b.perjob on a fresh database that never analyzed its job table, warmed up with 2,000 jobs while
 * empty and then grown to 62,000 rows (issue 30's case found from outside), and the same after an
 * ANALYZE. **Target: b.fresh ≥ 0.9× b.freshanalyzed.**
 */
export const jobclockFresh = jobclockProcessing('b.fresh', 'per-job', {}, { fresh: { analyze: false } });
export const jobclockFreshAnalyzed = jobclockProcessing('b.freshanalyzed', 'per-job', {}, { fresh: { analyze: true } });
/** The README loop with the jobs spread over 100 groups that take turns. */
export const jobclockGroups = jobclockProcessing('b.groups100', 'reports', { types: ['noop'], wait: '30s' }, { groups: 100 });
/**
 * The README loop with the jobs spread over 1,000 groups that nobody declared, each running one job
 * at a time (PATCH /groups-default {"concurrency": 1}): sequences. Against b.loop.
 */
export const jobclockSeq1000 = jobclockProcessing(
  'b.seq1000',
  'reports',
  { types: ['noop'], wait: '30s' },
  { groups: 1_000, groupsDefault: 1 },
);
/** The README loop over 100,000 groups without a default: the reference of b.seq100k for the spread alone. */
export const jobclockGroups100k = jobclockProcessing('b.groups100k', 'reports', { types: ['noop'], wait: '30s' }, { groups: 100_000 });
/**
 * The same over 100,000 groups (each with few jobs): what the default costs where groups are many.
 * **Target ≥ 0.8× b.groups100k** (the same loop and groups without the default); its ratio to b.loop
 * is printed beside it (bench/README.md, "What the b.seq100k target measures").
 */
export const jobclockSeq100k = jobclockProcessing(
  'b.seq100k',
  'reports',
  { types: ['noop'], wait: '30s' },
  { groups: 100_000, groupsDefault: 1 },
);
/**
 * The README loop over 1,000 groups under a default rate that does not bind (1,000 a second per
 * group): every begun job takes a token, every lease reads the tokens of the last second. Against
 * b.groups1000, the same groups without it.
 */
export const jobclockRate1000 = jobclockProcessing(
  'b.rate1000',
  'reports',
  { types: ['noop'], wait: '30s' },
  { groups: 1_000, groupsDefaultRate: '1000/1s' },
);
/** The README loop over 1,000 groups without a default: the reference of b.rate1000. */
export const jobclockGroups1000 = jobclockProcessing('b.groups1000', 'reports', { types: ['noop'], wait: '30s' }, { groups: 1_000 });
/** The README loop under a concurrency limit that does not bind (4 workers × 100 < 1000). */
export const jobclockPolicy = jobclockProcessing(
  'b.policy',
  'reports',
  { types: ['noop'], wait: '30s' },
  { policy: { concurrency: 1000 } },
);
/** The same under a rate that does not bind as well (50,000 a second). */
export const jobclockPolicyRate = jobclockProcessing(
  'b.policyrate',
  'reports',
  { types: ['noop'], wait: '30s' },
  { policy: { concurrency: 1000, rate: '50000/1s' } },
);
/** The README loop held at a concurrency limit of 50 (each lease gets at most what finished since). */
export const jobclockLimited = jobclockProcessing(
  'b.limit50',
  'reports',
  { types: ['noop'], wait: '30s' },
  { policy: { concurrency: 50 }, sampleRunning: true },
);

// ---------------------------------------------------------------------------------------------
// The newest releases: pg-boss 12 and graphile-worker 0.18 (they declare Node 22 in `engines` and
// run on Node 20 all the same; installed beside the older ones as npm aliases)

/**
 * The phase of a library that works on its own once started: counts what its handler executed
 * since the phase began, every 5 ms, until `until` or the queue is done; when everything was
 * executed, waits until the database says so too (the last batch's completion is part of the
 * run). Reading a counter instead of counting rows keeps the watcher off PostgreSQL's CPU.
 */
async function watchPhase(until: Until, executed: () => number, total: number, settled: () => Promise<number>): Promise<number> {
  const before = executed();
  while (performance.now() < until.deadline && executed() - before < until.jobs && executed() < total) await sleep(5);
  if (executed() >= total) {
    while (performance.now() < until.deadline + 5_000 && (await settled()) < total) await sleep(5);
  }
  return executed() - before;
}

async function pgBoss12Completed(db: { exec(text: string): Promise<{ rows: unknown[] }> }): Promise<number> {
  const r = await db.exec(`select count(*)::int as n from pgboss.job where name = '${QUEUE}' and state = 'completed'`);
  return (r.rows[0] as { n: number }).n;
}

/** pg-boss 12, either 4 loops of fetch(100) + complete(ids), or work() with batchSize 100, 4 at a time. */
function pgBoss12Processing(key: string, how: 'fetch' | 'work'): Unit {
  return {
    key,
    guardMs: (ctx) => processingTimeboxMs(ctx) + 60_000,
    async run(ctx) {
      const db = await ctx.server.createDatabase(await ctx.templates.pgboss12Jobs());
      const boss = new PgBoss12(pgBoss12Options(db.url));
      boss.on('error', (err) => ctx.log(`pg-boss 12 error: ${err.message}`));
      try {
        const n = ctx.templates.jobs;
        await boss.start();
        await db.settle();
        let t;
        if (how === 'fetch') {
          t = await warmThenTime(
            ctx,
            processingTimeboxMs(ctx),
            async (until) => {
              let done = 0;
              await Promise.all(
                Array.from({ length: 4 }, async () => {
                  while (performance.now() < until.deadline && done < until.jobs) {
                    const jobs = await boss.fetch(QUEUE, { batchSize: 100 });
                    if (jobs.length === 0) return;
                    await boss.complete(
                      QUEUE,
                      jobs.map((j) => j.id),
                    );
                    done += jobs.length;
                  }
                }),
              );
              return done;
            },
            warmupJobs(ctx),
          );
        } else {
          let executed = 0;
          // burstWhenBatchFull: a worker whose batch came back full fetches again at once instead
          // of waiting its polling interval (≥ 0.5 s) — pg-boss 12's own option for a backlog.
          await boss.work(
            QUEUE,
            { batchSize: 100, localConcurrency: 4, pollingIntervalSeconds: 0.5, burstWhenBatchFull: true },
            async (jobs) => {
              executed += jobs.length;
            },
          );
          t = await warmThenTime(
            ctx,
            processingTimeboxMs(ctx),
            (until) =>
              watchPhase(
                until,
                () => executed,
                n,
                () => pgBoss12Completed(db),
              ),
            warmupJobs(ctx),
          );
        }
        if (process.env.BENCH_STATEMENTS) ctx.log(`${key}: top statements\n${await db.topStatements()}`);
        const completed = await pgBoss12Completed(db);
        if (completed < t.warmup + t.done) throw new Error(`pg-boss 12: ${t.warmup + t.done} processed, ${completed} in state completed`);
        return timedRate(t, n);
      } finally {
        await boss.stop({ graceful: false }).catch(() => undefined);
        await db.retire();
      }
    },
  };
}

export const pgBoss12Fetch = pgBoss12Processing('c.pgboss12', 'fetch');
export const pgBoss12Work = pgBoss12Processing('c.pgboss12work', 'work');

/** graphile-worker 0.18's settings, overridable for tuning with BENCH_GRAPHILE='{"concurrentJobs":…}'. */
export function graphile018Settings(): Record<string, unknown> {
  // Tuned on this machine (3 rounds each, BENCH_GRAPHILE): the configuration of graphile-worker's
  // performance page (concurrency 24, localQueue 500, completeJobBatchDelay 0) ran ~25,000 jobs/s;
  // concurrency 4 ~30,000; localQueue 100 ~21,000; localQueue 2000 with concurrency 50 ~41,000;
  // completeJobBatchDelay 2 ms ~44,000; both together ~44,000–55,000 (this); localQueue off ~5,500.
  // LISTEN/NOTIFY is on (its default); pollInterval only matters when the queue runs dry.
  const base = {
    concurrentJobs: 50,
    maxPoolSize: 51,
    localQueue: { size: 2000 },
    completeJobBatchDelay: 2,
    failJobBatchDelay: 2,
    pollInterval: 2000,
  };
  return { ...base, ...(process.env.BENCH_GRAPHILE ? (JSON.parse(process.env.BENCH_GRAPHILE) as Record<string, unknown>) : {}) };
}

export const graphile018Processing: Unit = {
  key: 'c.graphile018',
  guardMs: (ctx) => processingTimeboxMs(ctx) + 60_000,
  async run(ctx) {
    const db = await ctx.server.createDatabase(await ctx.templates.graphile018Jobs());
    let runner: Awaited<ReturnType<typeof runGraphile018>> | null = null;
    try {
      const n = ctx.templates.jobs;
      await db.settle();
      let executed = 0;
      const remaining = async () =>
        Number(((await db.exec('select count(*)::int as n from graphile_worker._private_jobs')).rows[0] as { n: number }).n);
      runner = await runGraphile018({
        connectionString: db.url,
        logger: silentGraphileLogger018,
        noHandleSignals: true,
        taskList: {
          noop: async () => {
            executed++;
          },
        },
        preset: { worker: graphile018Settings() },
      });
      const t = await warmThenTime(
        ctx,
        processingTimeboxMs(ctx),
        (until) =>
          watchPhase(
            until,
            () => executed,
            n,
            async () => n - (await remaining()),
          ),
        warmupJobs(ctx),
      );
      const left = await remaining();
      if (n - left < t.warmup + t.done)
        throw new Error(`graphile-worker 0.18: ${t.warmup + t.done} executed but ${n - left} gone from its table`);
      return timedRate(t, n);
    } finally {
      await runner?.stop().catch(() => undefined);
      await db.retire();
    }
  },
};

/**
 * `b.interleaved` (only when BENCH_ONLY names it): the README loop and the loops with types
 * alone, wait alone and neither, interleaved on ONE instance and one queue in segments of 2,000
 * jobs (X_SEGMENT), in the order loop, types, wait, neither and then backwards, the first four
 * segments untimed. Neighbours' load and warm-up drift hit all four alike, which separate
 * measurements on a shared machine cannot promise. Best with BENCH_SCALE=5 (100,000 jobs: 9–10
 * timed segments per style). Prints each style's median rate and CPU per job.
 */
export const jobclockInterleaved: Unit = {
  key: 'b.interleaved',
  guardMs: () => 600_000,
  async run(ctx) {
    const db = await ctx.server.createDatabase(await ctx.templates.jobclockJobs());
    let client: HttpClient | null = null;
    try {
      const base = await ctx.host.open({ url: db.url, schedulerLoop: true });
      await db.settle();
      const c = new HttpClient(base, tokenOf('worker'), 4);
      client = c;
      const styles: [string, LeaseStyle][] = [
        ['types+wait', { types: ['noop'], wait: '30s' }],
        ['types', { types: ['noop'] }],
        ['wait', { wait: '30s' }],
        ['neither', {}],
      ];
      const segment = Math.max(400, Number(process.env.X_SEGMENT ?? 2000));
      const rates = new Map<string, number[]>(styles.map(([name]) => [name, []]));
      const cpus = new Map<string, number[]>(styles.map(([name]) => [name, []]));
      const segments = Math.floor(ctx.templates.jobs / segment);
      for (let k = 0; k < segments; k++) {
        const order = Math.floor(k / 4) % 2 === 0 ? styles : [...styles].reverse();
        const [name, style] = order[k % 4]!;
        let done = 0;
        const meter = startCpuMeter(ctx.host.tid);
        const started = performance.now();
        await Promise.all(
          Array.from({ length: 4 }, async (_, i) => {
            while (done < segment) {
              const jobs = await lease(c, `bench-worker-${i}`, 100, style);
              if (jobs.length === 0) return;
              const res = await c.post('/jobs/reports', {
                reports: jobs.map((j) => ({ id: j.id, leaseToken: j.leaseToken, outcome: 'finished' })),
              });
              if (res.status !== 200) throw unexpected('POST /jobs/reports', res);
              done += jobs.length;
            }
          }),
        );
        const ms = performance.now() - started;
        const split = meter.stop();
        if (done < segment) break; // the queue ran out (segments overshoot by up to 3 leases)
        if (k < 4) continue; // warm-up
        rates.get(name)!.push((done * 1000) / ms);
        if (split) cpus.get(name)!.push(((split.main + split.jobclock + split.helpers + split.postgres) * 1000) / done);
      }
      const median = (a: number[]) => (a.length === 0 ? Number.NaN : [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!);
      const extra: Record<string, number> = {};
      for (const [name] of styles) {
        const r = rates.get(name)!;
        extra[`${name} jobs/s`] = median(r);
        extra[`${name} cpu µs/job`] = median(cpus.get(name)!);
        ctx.log(
          `b.interleaved ${name.padEnd(10)} median ${median(r).toFixed(0)} jobs/s, ${median(cpus.get(name)!).toFixed(1)} µs CPU/job over ${r.length} segments [${r.map((v) => v.toFixed(0)).join(' ')}]`,
        );
      }
      return { value: extra['types+wait jobs/s']! / extra['neither jobs/s']!, extra };
    } finally {
      client?.close();
      await ctx.host.close().catch(() => undefined);
      await db.retire();
    }
  },
};

interface RunnerShape {
  /** Slots per runner (4 runners). */
  slots: number;
  /** How long each handler works, in ms (0: returns at once). */
  handlerMs: number;
  /** A policy set on the `noop` type first; with `concurrency`, running is sampled every 10 ms. */
  policy?: { concurrency: number };
}

/**
 * The Worker runner of @jobclock/client: 4 runners on the same queue as the README loop (b.loop),
 * its hand-written equivalent. A phase ends with stop(), which waits for the running handlers and
 * sends the reports still queued; when the queue is drained, the clock stops once the last reports
 * are answered (flush()), as b.loop's does.
 */
function runnerProcessing(key: string, shape: RunnerShape): Unit {
  return {
    key,
    guardMs: (ctx) => processingTimeboxMs(ctx) + 60_000,
    async run(ctx) {
      const db = await ctx.server.createDatabase(await ctx.templates.jobclockJobs());
      try {
        const n = ctx.templates.jobs;
        const base = await ctx.host.open({ url: db.url, schedulerLoop: true });
        await db.settle();
        if (shape.policy) await setNoopPolicy(base, shape.policy);
        const limit = shape.policy?.concurrency ?? null;
        const sampled: { value: Record<string, number> | null } = { value: null };
        const work = shape.handlerMs > 0 ? () => new Promise<void>((resolve) => setTimeout(resolve, shape.handlerMs)) : () => undefined;
        let finished = 0;
        const t = await warmThenTime(
          ctx,
          processingTimeboxMs(ctx),
          async (until) => {
            let done = 0;
            let allDone!: () => void;
            const over = new Promise<void>((resolve) => (allDone = resolve));
            const timed = until.jobs === Number.POSITIVE_INFINITY;
            const runners = Array.from(
              { length: 4 },
              (_, i) =>
                new Worker({
                  url: base,
                  token: tokenOf('worker'),
                  workerId: `${key}-runner-${i}`,
                  concurrency: shape.slots,
                  handlers: { noop: work },
                }),
            );
            for (const w of runners) {
              w.on('error', (err) => ctx.log(`${key}: ${(err as Error).message}`));
              w.on('job:finish', () => {
                done++;
                finished++;
                if (done >= until.jobs || finished >= n) allDone();
              });
              await w.start();
            }
            const stopSampling = limit !== null && timed ? runningSampler(db, limit) : null;
            const left = until.deadline - performance.now();
            await Promise.race([over, new Promise((resolve) => setTimeout(resolve, Math.max(0, left)))]);
            if (stopSampling) sampled.value = await stopSampling();
            // Drained: every report is answered once flushed, and nothing is left to lease; the clock
            // stops there, not after stop() has let the runners' waiting long-polls go.
            const drained = finished >= n;
            if (drained) await Promise.all(runners.map((w) => w.flush()));
            const endedAt = performance.now();
            await Promise.all(runners.map((w) => w.stop(10_000)));
            return drained ? { done, endedAt } : done;
          },
          warmupJobs(ctx),
        );
        return await checkedRate(db, t, n, `select count(*)::int as n from job where state = 'finished'`, limit, sampled.value);
      } finally {
        await ctx.host.close().catch(() => undefined);
        await db.retire();
      }
    },
  };
}

/** The Worker runner with no-op handlers, 4 runners × 100 slots: against the README loop it replaces. */
export const jobclockRunner = runnerProcessing('b.runner', { slots: 100, handlerMs: 0 });

/**
 * A binding limit with jobs that take time: concurrency 50 on the type, 4 runners × 25 slots (twice
 * the limit) whose handlers work 20 ms each. The limit is used fully when 50 jobs run all the time:
 * 2,500 jobs/s; the running count is sampled every 10 ms.
 */
export const LIMITED_WORK = { concurrency: 50, handlerMs: 20 };
export const jobclockLimitedRunner = runnerProcessing('b.limit50work', {
  slots: 25,
  handlerMs: LIMITED_WORK.handlerMs,
  policy: { concurrency: LIMITED_WORK.concurrency },
});
