/**
 * `node dist/bench/profile-default.js`: where PostgreSQL's time goes in the slim claim with the
 * groups default (lease-slim.ts) and the batched report, on b.seq100k's queue (20,000 queued no-op
 * jobs over 100,000 groups, a groups-default concurrency of 1). Runs 10 lease-and-report cycles of
 * 100, then PROFILE_CYCLES (default 80) more with pg_stat_statements tracking nested statements and
 * track_functions on, and prints the time per lease of each statement (the functions' own statements
 * too: jobclock_lanes' walk, jobclock_default_admit's two) and each function's calls.
 * PROFILE_DEFAULT=0 leaves the default unset (the same statements, its parts idle); PROFILE_FORM=plain
 * takes the plain slim claim instead (with PROFILE_DEFAULT=0); PROFILE_GROUPS the number of groups
 * (0: every job in the default group, the README loop's queue).
 * PROFILE_REWRITE='[["regexp", "replacement"], …]' rewrites the lease statement's text first (each
 * must match): a part taken out, measured against the statement whole.
 */
import { createDb } from '../src/db/database.js';
import { jobLeaseSlim, jobReport } from '../src/repositories/jobs.js';
import { BenchServer } from './lib/postgres.js';
import { rewriting, spreadQueue } from './lib/statement-rewrite.js';
import { Templates } from './lib/templates.js';

const log = (m: string) => process.stderr.write(`${m}\n`);
const server = await BenchServer.start();
try {
  const templates = new Templates(server, 20_000, 10, log);
  const fresh = await server.createDatabase(await templates.jobclockJobs());
  await fresh.settle();
  const setup = createDb({ url: fresh.url, poolSize: 1 });
  await setup.pool.query(`DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET track_functions = ''all''', current_database());
    EXECUTE format('ALTER DATABASE %I SET pg_stat_statements.track = ''all''', current_database()); END $$`);
  await setup.destroy();
  const db = createDb({ url: fresh.url, poolSize: 2 });
  await spreadQueue(db, Number(process.env.PROFILE_GROUPS ?? 100_000), process.env.PROFILE_DEFAULT === '0' ? null : 1);
  const slots = [...Array(100)].map(() => ({ worker: 'p', leaseMs: 30_000 }));
  const leaseDb = rewriting(db, process.env.PROFILE_REWRITE, '_p');
  const cycle = async () => {
    const r = await jobLeaseSlim(leaseDb, { now: new Date(), types: ['noop'], slots }, process.env.PROFILE_FORM !== 'plain');
    if (r === null || r === 'groups-default') throw new Error('stood aside');
    await jobReport(
      db,
      r.leased.map((j) => ({ id: j.id, leaseToken: j.leaseToken, outcome: 'finished' as const, jitter: 1 })),
      new Date(),
      { jobs: false },
    );
  };
  for (let i = 0; i < 10; i++) await cycle();
  await db.pool.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  await db.pool.query(`SELECT pg_stat_statements_reset()`);
  await db.pool.query(`SELECT pg_stat_reset()`);
  const n = Number(process.env.PROFILE_CYCLES ?? 80);
  for (let i = 0; i < n; i++) await cycle();
  await new Promise((r) => setTimeout(r, 600));
  const f = await db.pool.query(
    `SELECT funcname, calls, round(total_time::numeric / ${n} * 1000) AS total_us_per_lease, round(self_time::numeric / ${n} * 1000) AS self_us FROM pg_stat_user_functions ORDER BY total_time DESC`,
  );
  console.table(f.rows);
  const s = await db.pool.query(
    `SELECT calls, round((total_exec_time / ${n} * 1000)::numeric) AS us_per_lease, left(regexp_replace(query, '\\s+', ' ', 'g'), 110) AS q FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) ORDER BY total_exec_time DESC LIMIT 14`,
  );
  console.table(s.rows);
  await db.destroy();
  await fresh.retire();
} finally {
  await server.stop();
}
