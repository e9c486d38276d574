/**
 * (a) raw SQL claim-and-finish loops, (b) jobclock workers over HTTP, (c) pg-boss and
 * graphile-worker processing the same number of no-op jobs in-process.
 */
import { run as runGraphile } from 'graphile-worker';
import PgBoss from 'pg-boss';
import type pg from 'pg';
import { type BenchContext, scaled, timedRate, type Unit, warmThenTime } from '../lib/context.js';
import { HttpClient, unexpected } from '../lib/http.js';
import { PGBOSS_QUEUE as QUEUE, pgBossOptions, silentGraphileLogger as silentGraphile } from '../lib/templates.js';
import { tokenOf } from '../lib/tokens.js';

/** Queued no-op jobs at the start of every processing measurement (the seeded templates hold them). */
export const processingJobs = (ctx: BenchContext) => scaled(ctx, 20_000, 200);
/** The first tenth of the queue (or 1.5 s, whichever comes first) is the warm-up. */
const warmupJobs = (ctx: BenchContext) => Math.round(processingJobs(ctx) / 10);
export const processingTimeboxMs = (ctx: BenchContext) => Math.max(2_000, Math.round(4_000 * ctx.scale));

// ---------------------------------------------------------------------------------------------
// (a) raw SQL: FOR UPDATE SKIP LOCKED claim, then a compare-and-set finish, on jobclock's schema

const CLAIM = `
  update job set state = 'running', attempts = attempts + 1, worker = $2, lease_token = gen_random_uuid(),
         lease_expires_at = now() + interval '30 seconds', started_at = now(), updated_at = now()
   where id in (select id from job where state = 'queued' and run_at <= now()
                 order by priority desc, run_at, id for update skip locked limit $1)
  returning id, lease_token`;
const FINISH_ONE = `
  update job set state = 'finished', finished_at = now(), updated_at = now()
   where id = $1 and lease_token = $2 and state = 'running'`;
const FINISH_MANY = `
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
        const t = await warmThenTime(ctx, timebox(ctx), async (until) => {
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
        }, warmupJobs(ctx));
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

interface LeasedJob {
  id: string;
  leaseToken: string;
}

async function lease(client: HttpClient, worker: string, limit: number): Promise<LeasedJob[]> {
  const res = await client.post('/jobs/next', { worker, limit });
  if (res.status === 204) return [];
  if (res.status !== 200) throw unexpected('POST /jobs/next', res);
  const jobs = (res.body as { jobs?: LeasedJob[] }).jobs;
  if (!Array.isArray(jobs)) throw new Error('POST /jobs/next: 200 without a jobs array');
  return jobs;
}

function jobclockProcessing(key: string, mode: 'reports' | 'per-job'): Unit {
  const leaseLoops = 4;
  const reportSockets = 48;
  return {
    key,
    guardMs: (ctx) => processingTimeboxMs(ctx) + 60_000,
    async run(ctx) {
      const db = await ctx.server.createDatabase(await ctx.templates.jobclockJobs());
      let leaser: HttpClient | null = null;
      let reporter: HttpClient | null = null;
      try {
        const n = ctx.templates.jobs;
        const base = await ctx.host.open({ url: db.url, schedulerLoop: true });
        await db.settle();
        leaser = new HttpClient(base, tokenOf('worker'), leaseLoops);
        reporter = mode === 'per-job' ? new HttpClient(base, tokenOf('worker'), reportSockets) : leaser;
        const rep = reporter;
        const lsr = leaser;
        const t = await warmThenTime(ctx, processingTimeboxMs(ctx), async (until) => {
          let done = 0;
          await Promise.all(
            Array.from({ length: leaseLoops }, async (_, i) => {
              const worker = `bench-worker-${i}`;
              while (performance.now() < until.deadline && done < until.jobs) {
                const jobs = await lease(lsr, worker, 100);
                if (jobs.length === 0) return;
                if (mode === 'reports') {
                  const res = await rep.post('/jobs/reports', {
                    reports: jobs.map((j) => ({ id: j.id, leaseToken: j.leaseToken, outcome: 'finished' })),
                  });
                  if (res.status !== 200) throw unexpected('POST /jobs/reports', res);
                  const results = (res.body as { results?: { status: number }[] }).results ?? [];
                  const ok = results.filter((r) => r.status === 200).length;
                  if (ok !== jobs.length) throw new Error(`POST /jobs/reports: ${jobs.length - ok} of ${jobs.length} reports not 200`);
                  done += ok;
                } else {
                  await Promise.all(
                    jobs.map(async (j) => {
                      const res = await rep.post(`/jobs/${encodeURIComponent(j.id)}/finished`, { leaseToken: j.leaseToken });
                      if (res.status !== 200) throw unexpected('POST /jobs/{id}/finished', res);
                      done++;
                    }),
                  );
                }
              }
            }),
          );
          return done;
        }, warmupJobs(ctx));
        if (process.env.BENCH_STATEMENTS) ctx.log(`${key}: top statements\n${await db.topStatements()}`);
        const check = await db.exec(`select count(*)::int as n from job where state = 'finished'`);
        const finished = (check.rows[0] as { n: number }).n;
        if (finished !== t.warmup + t.done) throw new Error(`${t.warmup + t.done} reports answered 200 but ${finished} jobs are finished`);
        return timedRate(t, n);
      } finally {
        leaser?.close();
        if (reporter !== leaser) reporter?.close();
        await ctx.host.close().catch(() => undefined);
        await db.retire();
      }
    },
  };
}

export const jobclockReports = jobclockProcessing('b.reports', 'reports');
export const jobclockPerJob = jobclockProcessing('b.perjob', 'per-job');

// ---------------------------------------------------------------------------------------------
// (c) pg-boss: fetch 100 + complete(ids) loops, pg-boss's fastest documented way to process

export const pgBossProcessing: Unit = {
  key: 'c.pgboss',
  guardMs: (ctx) => processingTimeboxMs(ctx) + 60_000,
  async run(ctx) {
    const db = await ctx.server.createDatabase(await ctx.templates.pgbossJobs());
    const boss = new PgBoss(pgBossOptions(db.url));
    boss.on('error', (err) => ctx.log(`pg-boss error: ${err.message}`));
    try {
      const n = ctx.templates.jobs;
      await boss.start();
      await db.settle();
      const t = await warmThenTime(ctx, processingTimeboxMs(ctx), async (until) => {
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
      }, warmupJobs(ctx));
      const check = await db.exec(`select count(*)::int as n from pgboss.job where state = 'completed'`);
      const completed = (check.rows[0] as { n: number }).n;
      if (completed !== t.warmup + t.done) throw new Error(`pg-boss: ${t.warmup + t.done} fetched and completed, ${completed} in state completed`);
      return timedRate(t, n);
    } finally {
      await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
      await db.retire();
    }
  },
};

// ---------------------------------------------------------------------------------------------
// (c) graphile-worker, with the configuration of its own published performance test

export const graphileProcessing: Unit = {
  key: 'c.graphile',
  guardMs: (ctx) => processingTimeboxMs(ctx) + 60_000,
  async run(ctx) {
    const db = await ctx.server.createDatabase(await ctx.templates.graphileJobs());
    const watcher = await db.client('bench-watch');
    let runner: Awaited<ReturnType<typeof runGraphile>> | null = null;
    try {
      const n = ctx.templates.jobs;
      await db.settle();
      let executed = 0;
      const remaining = async () =>
        Number((await watcher.query<{ n: string }>('select count(*) as n from graphile_worker._private_jobs')).rows[0]!.n);
      runner = await runGraphile({
        connectionString: db.url,
        logger: silentGraphile,
        noHandleSignals: true,
        taskList: {
          noop: async () => {
            executed++;
          },
        },
        preset: {
          worker: {
            concurrentJobs: 24,
            maxPoolSize: 25,
            localQueue: { size: 500 },
            completeJobBatchDelay: 0,
            failJobBatchDelay: 0,
            pollInterval: 2000,
          },
        },
      });
      // graphile-worker runs on its own once started: the warm-up is the time it runs before the
      // count is taken, the same warm-up the others get.
      const t = await warmThenTime(ctx, processingTimeboxMs(ctx), async (until) => {
        const before = await remaining();
        let left = before;
        while (performance.now() < until.deadline && before - left < until.jobs) {
          await new Promise((r) => setTimeout(r, 10));
          left = await remaining();
          if (left === 0) break;
        }
        return before - left;
      }, warmupJobs(ctx));
      if (executed < t.warmup + t.done) throw new Error(`graphile-worker: ${t.warmup + t.done} jobs gone but only ${executed} executed`);
      return timedRate(t, n);
    } finally {
      await runner?.stop().catch(() => undefined);
      await watcher.end().catch(() => undefined);
      await db.retire();
    }
  },
};
