/**
 * `node dist/bench/explain-lease.js`: EXPLAIN (ANALYZE, BUFFERS) of jobclock's lease statement
 * (untyped and typed, as prepared by src/repositories/jobs.ts, generic plan as on the protocol
 * connections) and of the slim claim of bench/measure/lease-statement.ts, each claiming 100 of
 * 20,000 (EXPLAIN_JOBS) queued no-op jobs that belong to no periodic task, on a fresh embedded
 * PostgreSQL. EXPLAIN_POLICY=1 puts a concurrency limit of 1,000 and a rate of 50,000/1s, neither
 * binding, on the type first.
 */
import type pg from 'pg';
import { createDb } from '../src/db/database.js';
import { jobLease, jobReport } from '../src/repositories/jobs.js';
import { BenchServer } from './lib/postgres.js';
import { Templates } from './lib/templates.js';
import { PROPOSED_FIRST_STEP, SLIM_LEASE } from './measure/lease-statement.js';
import { CLAIM } from './measure/worker-protocol.js';

const log = (m: string) => process.stderr.write(`${m}\n`);

/**
 * The change proposed for the lease statement: its two UPDATEs find their rows through the
 * primary key whatever the generic plan estimates `LIMIT $n` to return (10 % of the queued jobs;
 * past some 100,000 queued, a hash join over a sequential scan of the whole table).
 */
function withKeyGuard(text: string): string {
  const leased = 'WHERE j.id = d.id AND NOT d.to_drop\n';
  const dropped = 'WHERE j.id = d.id AND d.to_drop\n';
  if (!text.includes(leased) || !text.includes(dropped)) throw new Error('the lease statement changed: update withKeyGuard()');
  return text
    .replace(leased, `WHERE j.id = d.id AND NOT d.to_drop AND j.id = ANY (ARRAY(SELECT a.id FROM assigned a WHERE NOT a.to_drop))\n`)
    .replace(dropped, `WHERE j.id = d.id AND d.to_drop AND j.id = ANY (ARRAY(SELECT x.id FROM decided x WHERE x.to_drop))\n`);
}
const server = await BenchServer.start();
try {
  const templates = new Templates(server, Number(process.env.EXPLAIN_JOBS ?? 20_000), 10, log);
  const fresh = await server.createDatabase(await templates.jobclockJobs());
  await fresh.settle();
  const db = createDb({ url: fresh.url, poolSize: 2 });
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
  await jobLease(db, { now: new Date(), slots });
  const leased = await jobLease(db, { now: new Date(), types: ['noop'], slots });
  // The report statement of POST /jobs/reports (without the jobs) for the jobs leased just now,
  // captured, not run: it is explained below, where it finishes them.
  dryRun = true;
  await jobReport(
    db,
    leased.leased.map((j) => ({ id: j.id, leaseToken: j.leaseToken, outcome: 'finished' as const, jitter: 1 })),
    new Date(),
    { jobs: false },
  );
  dryRun = false;
  const slimValues = [JSON.stringify(slots.map((s, i) => ({ n: i + 1, worker: s.worker, lease: s.leaseMs }))), new Date(), 100];
  const cases: [string, string, unknown[]][] = [
    ['jobclock lease, no filter', captured[0]!.text, captured[0]!.values],
    ['jobclock lease, types ["noop"]', captured[1]!.text, captured[1]!.values],
    ['slim claim (proposal)', SLIM_LEASE, slimValues],
    ['proposed first step (slim claim, task jobs deferred)', PROPOSED_FIRST_STEP, slimValues],
    ['raw claim of (a)', CLAIM, [100, 'raw']],
    ['jobclock report of 100 finished jobs', captured[2]!.text, captured[2]!.values],
    ['jobclock lease, no filter, with the proposed primary-key guard', withKeyGuard(captured[0]!.text), captured[0]!.values],
  ];
  for (const [i, [label, text, values]] of cases.entries()) {
    const name = `explain_${i}`;
    const current = () => values.map((v) => (v instanceof Date ? new Date() : v));
    // Prepared (the report: with no jobs, so that it finishes its jobs only when explained), then
    // EXPLAIN EXECUTE under force_generic_plan: the plan a worker gets.
    const report = label.startsWith('jobclock report');
    await client.query({ name, text, values: report ? current().map((v, k) => (k === 0 ? '[]' : v)) : current() });
    const now = current();
    // EXECUTE takes no bind parameters: the values go in as literals.
    const literal = (v: unknown): string =>
      v === null || v === undefined
        ? 'NULL'
        : v instanceof Date
          ? client.escapeLiteral(v.toISOString())
          : Array.isArray(v)
            ? client.escapeLiteral(`{${v.map((x) => `"${String(x)}"`).join(',')}}`)
            : typeof v === 'number' || typeof v === 'boolean'
              ? String(v)
              : client.escapeLiteral(typeof v === 'string' ? v : JSON.stringify(v));
    const { rows } = await client.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN (ANALYZE, BUFFERS) EXECUTE ${name}(${now.map(literal).join(', ')})`,
    );
    console.log(`\n=== ${label}\n${rows.map((r) => r['QUERY PLAN']).join('\n')}`);
  }
  // The proposed first step with jobs of a periodic task among the candidates: those come back
  // deferred, unleased, and the others fill the slots in order.
  await client.query(
    `insert into periodic_task (id, task, timer, nextrun, created, updated) values ('explain', 'explain', 'every 1h', now(), now(), now())`,
  );
  await client.query(
    `insert into job (type, args, run_at, priority, periodic_task_id) select 'noop', '{}', now(), 10, 'explain' from generate_series(1, 3)`,
  );
  const step = await client.query<{ deferred: boolean; state: string; slot: string | null }>({
    name: 'explain_first_step',
    text: PROPOSED_FIRST_STEP,
    values: [slimValues[0], new Date(), 10],
  });
  const deferred = step.rows.filter((r) => r.deferred);
  console.log(
    `\n=== proposed first step with 3 task jobs of higher priority among 10 candidates: ${step.rows.length - deferred.length} leased ` +
      `(slots ${step.rows
        .filter((r) => !r.deferred)
        .map((r) => r.slot)
        .join(',')}), ${deferred.length} deferred (state ${[...new Set(deferred.map((r) => r.state))].join(',')})`,
  );
  await client.end();
  await db.destroy();
  await fresh.retire();
} catch (err) {
  console.error(err);
  process.exitCode = 1;
} finally {
  await server.stop();
}
