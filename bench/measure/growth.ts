/**
 * (j) Growth: jobclock on a job table holding a long history of final jobs (BENCH_HISTORY, default
 * 10 million; built from SQL by Templates.jobclockHistory). The README loop on it against the same
 * loop on an empty table, and what an operator's reads cost there: the first page of GET /jobs for
 * each filter, GET /types, GET /groups and a /metrics scrape, each asked one at a time.
 */
import { type BenchContext, type Unit } from '../lib/context.js';
import { HttpClient, unexpected } from '../lib/http.js';
import { latencySummary } from '../lib/stats.js';
import { tokenOf } from '../lib/tokens.js';
import { jobclockProcessing } from './worker-protocol.js';

export const historyJobs = (ctx: BenchContext) =>
  Math.max(100_000, Math.round(Number(process.env.BENCH_HISTORY ?? 10_000_000) * Math.min(1, ctx.scale)));

/** The README loop (b.loop) behind the history. */
export const growthLoop: Unit = {
  ...jobclockProcessing('j.loop', 'reports', { types: ['noop'], wait: '30s' }, { history: historyJobs }),
  guardMs: () => 900_000, // the first of the two builds the history
};

/** The reads: name → path. The history's customers are c-0 … c-99999, each in 1 of 100,000 jobs' args. */
export const GROWTH_READS: [string, string][] = [
  ['type', '/jobs?type=hist-7&limit=50'],
  ['state (1 %)', '/jobs?state=failed&limit=50'],
  ['type + state', '/jobs?type=hist-7&state=failed&limit=50'],
  ['group', '/jobs?group=customer:42&limit=50'],
  ['worker', '/jobs?worker=w-7&limit=50'],
  ['argsContains', `/jobs?argsContains=${encodeURIComponent('{"customer":"c-4242"}')}&limit=50`],
  ['q (text)', `/jobs?q=${encodeURIComponent('c-4242')}&limit=50`],
  ['GET /types', '/types'],
  ['GET /groups', '/groups?limit=100'],
  ['GET /metrics', '/metrics'],
];

export const growthReads: Unit = {
  key: 'j.reads',
  guardMs: () => 900_000,
  async run(ctx) {
    const db = await ctx.server.createDatabase(await ctx.templates.jobclockHistory(historyJobs(ctx)));
    const client = { http: null as HttpClient | null };
    try {
      const base = await ctx.host.open({ url: db.url, schedulerLoop: true });
      await db.settle();
      client.http = new HttpClient(base, tokenOf('admin'), 1);
      const extra: Record<string, number> = { history: historyJobs(ctx) };
      const asks = Math.max(5, Math.round(20 / ctx.rounds));
      for (const [i, [, path]] of GROWTH_READS.entries()) {
        const ms: number[] = [];
        for (let k = 0; k < asks + 2; k++) {
          const t = performance.now();
          const res = await client.http.request('GET', path);
          const took = performance.now() - t;
          if (res.status !== 200) throw unexpected(`GET ${path}`, res);
          if (k >= 2) ms.push(took); // the first two warm the plan cache and the pages
        }
        const s = latencySummary(ms);
        extra[`p50.${i}`] = s.p50;
        extra[`p99.${i}`] = s.p99;
      }
      return { value: extra['p50.0']!, extra };
    } finally {
      client.http?.close();
      await ctx.host.close().catch(() => undefined);
      await db.retire();
    }
  },
};
