/**
 * Dependency graphs worked by many workers on 3 instances at once: every job runs once its
 * dependencies finished and never before, with their results handed down; failures cascade.
 */
import request from 'supertest';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { createTestStack, type TestStack } from '../support/app.js';
import { type TestDatabase } from '../support/db.js';
import { useTestStack } from '../support/fixture.js';
import { sleep } from '../support/wait.js';

let tdb: TestDatabase;
let stack: TestStack;
const stacks: TestStack[] = [];
useTestStack({ poolSize: 8 }, (f) => ({ tdb, stack } = f));
beforeAll(async () => {
  await tdb.db.pool.query(`
    CREATE TABLE test_state_seq (job_id bigint NOT NULL, state text NOT NULL, seq bigserial);
    CREATE INDEX ON test_state_seq (job_id);
    CREATE FUNCTION test_record_state() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO test_state_seq (job_id, state) VALUES (NEW.id, NEW.state); RETURN NULL; END $$;
    CREATE TRIGGER test_record_state AFTER UPDATE OF state ON job FOR EACH ROW
      WHEN (OLD.state IS DISTINCT FROM NEW.state AND NEW.state NOT IN ('queued', 'waiting')) EXECUTE FUNCTION test_record_state();`);
  stacks.push(stack);
  for (const id of ['b', 'c']) stacks.push(await createTestStack({ db: tdb.connect(6), instanceId: `deps-${id}` }));
});
afterAll(async () => {
  for (const s of stacks.slice(1)) await s.close();
});
beforeEach(async () => {
  for (const t of ['job_dependency', 'job_event', 'job', 'test_state_seq']) await tdb.db.pool.query(`DELETE FROM ${t}`);
});

type Leased = { id: string; leaseToken: string; type: string; args: any; after: string[]; dependencies?: any[] };
const post = (s: TestStack, url: string, body: object) => request(s.app.server).post(url).send(body);

/** A seeded random source, so that a failing graph can be built again. */
function seeded(seed: number) {
  return () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
}

/**
 * Workers on every instance lease `types` (up to 50 at a time) until `idle` leases in a row found
 * nothing, and report each job with `outcome(job)`; `seen` checks every lease as it comes.
 */
async function work(types: string[], outcome: (j: Leased) => 'finished' | 'failed', seen: (j: Leased) => void, workersPer = 4) {
  const worker = async (s: TestStack, name: string) => {
    for (let idle = 0; idle < 15;) {
      const res = await post(s, '/jobs/next', { worker: name, types, limit: 50 });
      if (res.status === 204) {
        idle++;
        await sleep(10);
        continue;
      }
      expect(res.status).toBe(200);
      idle = 0;
      const jobs = res.body.jobs as Leased[];
      jobs.forEach(seen);
      const reports = jobs.map((j) => {
        const o = outcome(j);
        return o === 'finished'
          ? { id: j.id, leaseToken: j.leaseToken, outcome: o, result: { from: j.id } }
          : { id: j.id, leaseToken: j.leaseToken, outcome: o, error: 'flaky', retryIn: '1ms' };
      });
      const r = await post(s, '/jobs/reports', { reports });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.results.every((x: { status: number }) => x.status === 200)).toBe(true);
    }
  };
  await Promise.all(stacks.flatMap((s, i) => Array.from({ length: workersPer }, (_, k) => worker(s, `w${i}-${k}`))));
}

/**
 * Edges whose job was leased before its dependency ended: none may exist. The order is the
 * database's own (a sequence drawn by a trigger of this test as each state change happens): the
 * timestamps startedAt and finishedAt are read from the clock before their statements run, so a
 * lease that waited for a connection while a report committed may carry a startedAt a few
 * milliseconds before the finishedAt of the report it came after. Those are checked within 250 ms.
 */
async function startedTooEarly() {
  const { rows } = await tdb.db.pool.query(`
    SELECT e.job_id, e.depends_on, r.s AS leased, f.s AS ended
    FROM job_dependency e
    CROSS JOIN LATERAL (SELECT min(seq) AS s FROM test_state_seq WHERE job_id = e.job_id AND state = 'running') r
    CROSS JOIN LATERAL (SELECT max(seq) AS s FROM test_state_seq WHERE job_id = e.depends_on AND state <> 'running') f
    WHERE r.s IS NOT NULL AND (f.s IS NULL OR r.s < f.s)`);
  const { rows: clocks } = await tdb.db.pool.query(`
    SELECT j.id FROM job_dependency e JOIN job j ON j.id = e.job_id JOIN job d ON d.id = e.depends_on
    WHERE j.started_at IS NOT NULL AND (d.finished_at IS NULL OR j.started_at < d.finished_at - interval '250 ms')`);
  return [...rows, ...clocks];
}

it('completes a graph of 10,000 jobs, each run once, never before its dependencies finished', { timeout: 120_000 }, async () => {
  const random = seeded(32);
  const ids: string[][] = [];
  // ten layers of 1000: each job runs after two jobs of the layer before (existing ids) and some
  // after an earlier job of their own layer (a ref); a few fail once and then succeed
  for (let layer = 0; layer < 10; layer++) {
    const prev = ids[layer - 1] ?? [];
    const jobs = Array.from({ length: 1000 }, (_, i) => {
      const after = prev.length ? [prev[Math.floor(random() * 1000)]!, prev[Math.floor(random() * 1000)]!] : [];
      if (i > 0 && random() < 0.3) after.push(`j${Math.floor(random() * i)}`);
      return { type: 'graph', ref: `j${i}`, after, maxAttempts: 2, args: { flaky: random() < 0.02 } };
    });
    const res = await post(stacks[layer % 3]!, '/jobs/batch', { jobs });
    expect(res.status).toBe(201);
    ids.push(res.body.jobs.map((j: { id: string }) => j.id));
  }
  const runs = new Map<string, number>();
  let checked = 0;
  await work(
    ['graph'],
    (j) => (j.args.flaky && runs.get(j.id) === 1 ? 'failed' : 'finished'),
    (j) => {
      runs.set(j.id, (runs.get(j.id) ?? 0) + 1);
      // results handed down: one per dependency, each finished with the result it reported
      expect((j.dependencies ?? []).map((d) => d.id)).toEqual(j.after);
      for (const d of j.dependencies ?? []) expect(d).toMatchObject({ state: 'finished', result: { from: d.id } });
      checked += j.after.length;
    },
  );
  const { rows } = await tdb.db.pool.query(`SELECT state, count(*)::int AS n FROM job GROUP BY state`);
  expect(rows).toEqual([{ state: 'finished', n: 10_000 }]);
  const flaky = await tdb.db.pool.query(`SELECT count(*)::int AS n FROM job WHERE (args->>'flaky')::boolean AND attempts = 2`);
  // every job leased once, the flaky ones twice (their first attempt failed)
  expect([...runs.values()].filter((n) => n === 1).length).toBe(10_000 - flaky.rows[0].n);
  expect([...runs.values()].filter((n) => n === 2).length).toBe(flaky.rows[0].n);
  expect(flaky.rows[0].n).toBeGreaterThan(50);
  expect(checked).toBeGreaterThan(18_000);
  expect(await startedTooEarly()).toEqual([]);
});

it('cascades a failure across instances and runs the onDependencyFailure "run" steps with what ended', { timeout: 60_000 }, async () => {
  // 20 chains of 10; in every other chain, link 3 fails for good; each chain ends with a report
  // that runs whatever happened
  const jobs = Array.from({ length: 20 }, (_, c) => [
    ...Array.from({ length: 10 }, (_, k) => ({
      type: 'link',
      ref: `c${c}-${k}`,
      after: k > 0 ? [`c${c}-${k - 1}`] : [],
      maxAttempts: 1,
      args: { fail: c % 2 === 0 && k === 3 },
    })),
    { type: 'report', ref: `c${c}-report`, after: [`c${c}-9`, `c${c}-0`], onDependencyFailure: 'run' },
  ]).flat();
  const res = await post(stack, '/jobs/batch', { jobs });
  expect(res.status).toBe(201);
  const leased = new Set<string>();
  const reports: Leased[] = [];
  await work(
    ['link', 'report'],
    (j) => (j.args?.fail ? 'failed' : 'finished'),
    (j) => {
      expect(leased.has(j.id)).toBe(false);
      leased.add(j.id);
      if (j.type === 'report') reports.push(j);
    },
  );
  const { rows } = await tdb.db.pool.query(`SELECT type, state, count(*)::int AS n FROM job GROUP BY 1, 2 ORDER BY 1, 2`);
  expect(rows).toEqual([
    { type: 'link', state: 'cancelled', n: 60 },
    { type: 'link', state: 'failed', n: 10 },
    { type: 'link', state: 'finished', n: 130 },
    { type: 'report', state: 'finished', n: 20 },
  ]);
  expect(leased.size).toBe(130 + 10 + 20);
  expect(reports.map((r) => r.dependencies!.map((d) => d.state).join()).sort()).toEqual([
    ...Array(10).fill('cancelled,finished'),
    ...Array(10).fill('finished,finished'),
  ]);
  const reasons = await tdb.db.pool.query(
    `SELECT count(*)::int AS n FROM job_event WHERE kind = 'cancelled' AND detail->>'reason' = 'dependency-failed'`,
  );
  expect(reasons.rows[0].n).toBe(60);
  expect(await startedTooEarly()).toEqual([]);
});
