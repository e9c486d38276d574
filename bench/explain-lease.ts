/**
 * `node dist/bench/explain-lease.js`: EXPLAIN (ANALYZE, BUFFERS) of jobclock's lease statements as
 * src/repositories/jobs.ts prepares them (generic plans, as on the protocol connections) — the slim
 * claim (lease-slim.ts) and the full statement (jobLeaseFull), untyped and typed, and the slim claim
 * with the groups default, typed — of the raw claim
 * of bench/'s (a) rows and of the batched report, each claiming or finishing 100 of 20,000
 * (EXPLAIN_JOBS) queued no-op jobs that belong to no periodic task, on a fresh embedded PostgreSQL.
 * EXPLAIN_POLICY=1 puts a concurrency limit of 1,000 and a rate of 50,000/1s, neither binding, on
 * the type first (the slim claim then stands aside: its plan shows the gate). EXPLAIN_WARM=n runs n
 * leases and reports of 100 first, as a worker loop leaves the table (dead index entries of the
 * jobs that left the queue, not yet vacuumed). EXPLAIN_GROUPS=n spreads the jobs over n groups first
 * (job i in group i mod n, the table rewritten), as the b.groups rows do; EXPLAIN_DEFAULT=n sets a
 * groups-default concurrency of n first (b.seq1000 and b.seq100k: n = 1). EXPLAIN_RUNNING=n then
 * leases n jobs (in leases of 100) and leaves them running, as the other workers' leases do in a
 * bench row (under the default, their groups are full). EXPLAIN_LANES=1 also explains the
 * statements inside a typed call of jobclock_lanes (auto_explain, nested statements) from the next
 * point of this process's sequence on the ring (nextLaneStart), as a lease makes it.
 */
import type pg from 'pg';
import { createDb } from '../src/db/database.js';
import { nextLaneStart } from '../src/repositories/job/lease-lanes.js';
import { jobLease, jobLeaseFull, jobLeaseSlim, jobReport } from '../src/repositories/jobs.js';
import { BenchServer } from './lib/postgres.js';
import { Templates } from './lib/templates.js';
import { CLAIM } from './measure/worker-protocol.js';

const log = (m: string) => process.stderr.write(`${m}\n`);

const server = await BenchServer.start();
try {
  const templates = new Templates(server, Number(process.env.EXPLAIN_JOBS ?? 20_000), 10, log);
  const fresh = await server.createDatabase(await templates.jobclockJobs());
  await fresh.settle();
  const db = createDb({ url: fresh.url, poolSize: 2 });
  if (process.env.EXPLAIN_GROUPS) {
    await db.pool.query(`UPDATE job SET group_ = 'g' || (id % ${Number(process.env.EXPLAIN_GROUPS)})`);
    await db.pool.query('VACUUM FULL job');
    await db.pool.query('ANALYZE job');
  }
  // EXPLAIN_DEFAULT=n: groups-default concurrency n (b.seq rows), before the warm-up (which then
  // leaves permits behind, released, as a worker loop does)
  if (process.env.EXPLAIN_DEFAULT) {
    await db.pool.query(`INSERT INTO flow_default (kind, concurrency, updated_at) VALUES ('group', $1, now())`, [
      Number(process.env.EXPLAIN_DEFAULT),
    ]);
  }
  // EXPLAIN_WARM=n: n leases and reports of 100 first, as a worker loop leaves the table (dead
  // index entries of the jobs that left the queue, not yet vacuumed)
  for (let i = 0; i < Number(process.env.EXPLAIN_WARM ?? 0); i++) {
    const { leased } = await jobLease(db, {
      now: new Date(),
      types: ['noop'],
      slots: [...Array(100)].map(() => ({ worker: 'warm', leaseMs: 30_000 })),
    });
    const reports = leased.map((j) => ({ id: j.id, leaseToken: j.leaseToken, outcome: 'finished' as const, jitter: 1 }));
    await jobReport(db, reports, new Date(), { jobs: false });
  }
  // EXPLAIN_RUNNING=n: n jobs leased and left running (the other workers' leases, meanwhile)
  for (let left = Number(process.env.EXPLAIN_RUNNING ?? 0); left > 0; left -= 100) {
    const slots = [...Array(Math.min(100, left))].map(() => ({ worker: 'running', leaseMs: 600_000 }));
    await jobLease(db, { now: new Date(), types: ['noop'], slots });
  }
  const client = await fresh.client('bench-explain');
  client.on('error', () => undefined);
  await client.query('SET plan_cache_mode = force_generic_plan');
  // The statement as jobLease sends it: its text and values, captured on the way out.
  const captured: { text: string; values: unknown[] }[] = [];
  const original = db.protocol.query.bind(db.protocol) as (q: unknown) => Promise<pg.QueryResult>;
  let dryRun = false; // capture without running
  (db.protocol as unknown as { query: (q: { text: string; values: unknown[] }) => Promise<pg.QueryResult> }).query = (q) => {
    captured.push({ text: q.text, values: q.values });
    return dryRun ? Promise.resolve({ rows: [] } as unknown as pg.QueryResult) : original(q);
  };
  if (process.env.EXPLAIN_POLICY) {
    await client.query(
      `insert into flow_policy (kind, name, concurrency, rate_limit, rate_window_ms, updated_at) values ('type', 'noop', 1000, 50000, 1000, now())`,
    );
    await client.query(`insert into flow_slot (kind, name, n) select 'type', 'noop', g from generate_series(1, 1000) g`);
    await client.query(`insert into flow_token (kind, name, n) select 'type', 'noop', g from generate_series(1, 50000) g`);
    await client.query('analyze flow_policy, flow_slot, flow_token');
  }
  const slots = Array.from({ length: 100 }, () => ({ worker: 'explain', leaseMs: 30_000 }));
  // captured, not run (a statement that stands aside captures as well)
  dryRun = true;
  await jobLeaseSlim(db, { now: new Date(), slots });
  await jobLeaseSlim(db, { now: new Date(), types: ['noop'], slots });
  await jobLeaseFull(db, { now: new Date(), slots });
  await jobLeaseFull(db, { now: new Date(), types: ['noop'], slots });
  await jobLeaseSlim(db, { now: new Date(), types: ['noop'], slots }, true);
  dryRun = false;
  const leased = await jobLease(db, { now: new Date(), types: ['noop'], slots });
  // The report statement of POST /jobs/reports (without the jobs) for the jobs leased just now,
  // captured, not run: it is explained below, where it finishes them.
  const reportAt = captured.length;
  dryRun = true;
  await jobReport(
    db,
    leased.leased.map((j) => ({ id: j.id, leaseToken: j.leaseToken, outcome: 'finished' as const, jitter: 1 })),
    new Date(),
    { jobs: false },
  );
  dryRun = false;
  const cases: [string, string, unknown[]][] = [
    ['slim claim, no filter', captured[0]!.text, captured[0]!.values],
    ['slim claim, types ["noop"]', captured[1]!.text, captured[1]!.values],
    ['full lease statement, no filter', captured[2]!.text, captured[2]!.values],
    ['full lease statement, types ["noop"]', captured[3]!.text, captured[3]!.values],
    ['slim claim with the groups default, types ["noop"]', captured[4]!.text, captured[4]!.values],
    ['raw claim of (a)', CLAIM, [100, 'raw']],
    ['jobclock report of 100 finished jobs', captured[reportAt]!.text, captured[reportAt]!.values],
  ];
  for (const [i, [label, text, values]] of cases.entries()) {
    const name = `explain_${i}`;
    const current = () => values.map((v) => (v instanceof Date ? new Date() : v));
    // Prepared (the report: with no jobs, so that it finishes its jobs only when explained), then
    // EXPLAIN EXECUTE under force_generic_plan: the plan a worker gets.
    // prepared with values that change nothing: the report with no jobs (empty arrays)
    const report = label.startsWith('jobclock report');
    await client.query({ name, text, values: report ? current().map((v) => (Array.isArray(v) ? [] : v)) : current() });
    const now = current();
    // EXECUTE takes no bind parameters: the values go in as literals.
    const literal = (v: unknown): string =>
      v === null || v === undefined
        ? 'NULL'
        : v instanceof Date
          ? client.escapeLiteral(v.toISOString())
          : Array.isArray(v)
            ? client.escapeLiteral(`{${v.map((x) => (x === null ? 'NULL' : `"${String(x).replace(/[\\"]/g, '\\$&')}"`)).join(',')}}`)
            : typeof v === 'number' || typeof v === 'boolean'
              ? String(v)
              : client.escapeLiteral(typeof v === 'string' ? v : JSON.stringify(v));
    const { rows } = await client.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN (ANALYZE, BUFFERS) EXECUTE ${name}(${now.map(literal).join(', ')})`,
    );
    console.log(`\n=== ${label}\n${rows.map((r) => r['QUERY PLAN']).join('\n')}`);
  }
  if (process.env.EXPLAIN_LANES) {
    await client.query(`LOAD 'auto_explain'`);
    for (const set of ['log_min_duration = 0', 'log_nested_statements = on', 'log_analyze = on', 'log_buffers = on', 'log_level = notice'])
      await client.query(`SET auto_explain.${set}`);
    const notices: string[] = [];
    client.on('notice', (n) => notices.push(n.message ?? ''));
    const start = nextLaneStart();
    await client.query(
      `SELECT count(*) FROM jobclock_lanes(ARRAY['noop'], NULL, now(), 100, $1, '{}', (SELECT concurrency FROM flow_default WHERE kind = 'group'))`,
      [start],
    );
    await client.query(`SET auto_explain.log_min_duration = -1`);
    console.log(`\n=== jobclock_lanes, typed, from ${start}: its statements\n${notices.join('\n\n')}`);
  }
  await client.end();
  await db.destroy();
  await fresh.retire();
} catch (err) {
  console.error(err);
  process.exitCode = 1;
} finally {
  await server.stop();
}
