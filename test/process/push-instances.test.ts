import { beforeAll, expect, it } from 'vitest';
import { startReceiver } from '../http/webhooks-support.js';
import type { TestDatabase } from '../support/db.js';
import { call, useJobclockProcesses } from './support.js';

/**
 * A push type across three real jobclock processes on one database: the type's concurrency holds
 * at the receiver (overlapping requests never exceed it), every job is pushed and finished once,
 * and more than one process takes part.
 */
const processes = useJobclockProcesses();
let tdb: TestDatabase;
const start = () => processes.start();
beforeAll(() => {
  tdb = processes.tdb();
});

it("holds a push type's concurrency across three processes", async () => {
  const receiver = await startReceiver();
  receiver.answer = () => ({ status: 200, body: '{"ok":true}', headers: { 'content-type': 'application/json' }, delayMs: 25 });
  const instances = [await start(), await start(), await start()];
  const base = instances[0]!.base;
  await call(base, 'PATCH', '/types/resize', { concurrency: 3, push: { url: receiver.url } });
  await call(base, 'POST', '/jobs/batch', { jobs: Array.from({ length: 150 }, (_, i) => ({ type: 'resize', args: { i } })) });

  const t0 = Date.now();
  let finished = 0;
  while (finished < 150 && Date.now() - t0 < 60_000) {
    await new Promise((r) => setTimeout(r, 100));
    const { rows } = await tdb.db.pool.query(`SELECT count(*)::int AS n FROM job WHERE type = 'resize' AND state = 'finished'`);
    finished = rows[0].n;
  }
  for (const { child } of instances) child.kill('SIGTERM');
  await Promise.all(instances.map(({ child }) => new Promise((r) => (child.exitCode === null ? child.once('exit', r) : r(null)))));
  await receiver.close();

  expect(finished).toBe(150);
  expect(receiver.maxConcurrent).toBe(3);
  const ids = receiver.requests.map((r) => JSON.parse(r.raw).job.args.i as number);
  expect(new Set(ids).size).toBe(150);
  expect(ids.length).toBe(150);
  const { rows } = await tdb.db.pool.query(
    `SELECT count(DISTINCT worker)::int AS workers, bool_and(worker LIKE 'push:%') AS pushed, bool_and(result = '{"ok":true}') AS results
       FROM job WHERE type = 'resize'`,
  );
  expect(rows[0]).toEqual({ workers: expect.any(Number), pushed: true, results: true });
  expect(rows[0].workers).toBeGreaterThan(1);
}, 180_000);
