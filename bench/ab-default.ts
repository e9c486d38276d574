/**
 * `node dist/bench/ab-default.js`: an A/B of the slim claim with the groups default. A and B
 * alternate lease-and-report cycles of 100 (AB_CYCLES, default 180, after 10 each to warm up) on
 * b.seq100k's queue (40,000 jobs over 100,000 groups, a groups default of 1), each on a database of
 * its own, and it prints each one's PostgreSQL time per lease and per report (µs). Alternating on one
 * server is what tells a change of a few per cent from this machine's drift; identical sides differ
 * by ±3 %. AB_OTHER: B's build of src/repositories/jobs.js (default: this one; a copy of another
 * build's dist/ inside this checkout, so that its imports resolve); AB_SETUP_A / AB_SETUP_B: SQL run
 * on A's / B's database first (another index, a function as it was); AB_REWRITE_B: [regexp,
 * replacement] pairs applied to B's lease statement (a part taken out); AB_DEFAULT=0 sets no
 * default, AB_FORM=plain takes the plain slim claim (AB_DEFAULT_B, AB_FORM_B…: for one side only).
 */
import { createDb } from '../src/db/database.js';
import * as here from '../src/repositories/jobs.js';
import { BenchServer } from './lib/postgres.js';
import { rewriting, spreadQueue } from './lib/statement-rewrite.js';
import { Templates } from './lib/templates.js';

type Leases = Pick<typeof here, 'jobLeaseSlim' | 'jobReport'>;
const other: Leases = process.env.AB_OTHER ? await import(process.env.AB_OTHER) : here;
const log = (m: string) => process.stderr.write(`${m}\n`);
const server = await BenchServer.start();
try {
  const templates = new Templates(server, 40_000, 10, log);
  const template = await templates.jobclockJobs();
  const side = async (tag: string, code: Leases, setup: string | undefined, rewrite: string | undefined) => {
    const env = (name: string) => process.env[`${name}_${tag}`] ?? process.env[name];
    const fresh = await server.createDatabase(template);
    await fresh.settle();
    const s = createDb({ url: fresh.url, poolSize: 1 });
    await s.pool.query(
      `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET pg_stat_statements.track = ''all''', current_database()); END $$`,
    );
    await s.destroy();
    const db = createDb({ url: fresh.url, poolSize: 2 });
    await spreadQueue(db, 100_000, env('AB_DEFAULT') === '0' ? null : 1);
    if (setup) await db.pool.query(setup);
    await db.pool.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    const leaseDb = rewriting(db, rewrite);
    const slots = [...Array(100)].map(() => ({ worker: 'p', leaseMs: 30_000 }));
    return {
      tag,
      db,
      fresh,
      cycle: async () => {
        const r = await code.jobLeaseSlim(leaseDb, { now: new Date(), types: ['noop'], slots }, env('AB_FORM') !== 'plain');
        if (r === null || r === 'groups-default') throw new Error('stood aside');
        await code.jobReport(
          db,
          r.leased.map((j) => ({ id: j.id, leaseToken: j.leaseToken, outcome: 'finished' as const, jitter: 1 })),
          new Date(),
          { jobs: false },
        );
      },
    };
  };
  const sides = [
    await side('A', here, process.env.AB_SETUP_A, undefined),
    await side('B', other, process.env.AB_SETUP_B, process.env.AB_REWRITE_B),
  ];
  for (let i = 0; i < 10; i++) for (const s of sides) await s.cycle();
  for (const s of sides) await s.db.pool.query(`SELECT pg_stat_statements_reset()`);
  const n = Number(process.env.AB_CYCLES ?? 180);
  for (let i = 0; i < n; i++) for (const s of sides) await s.cycle();
  const out: string[] = [];
  for (const s of sides) {
    const r = await s.db.pool.query<{ lease: string; report: string }>(
      `SELECT round(sum(total_exec_time) FILTER (WHERE query LIKE '%WITH gate%') / ${n} * 1000) AS lease,
              round(sum(total_exec_time) FILTER (WHERE query LIKE '%WITH input%') / ${n} * 1000) AS report
       FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND toplevel`,
    );
    out.push(`${s.tag} ${r.rows[0]!.lease}/${r.rows[0]!.report}`);
  }
  console.log(out.join('  '));
  for (const s of sides) {
    await s.db.destroy();
    await s.fresh.retire();
  }
} finally {
  await server.stop();
}
