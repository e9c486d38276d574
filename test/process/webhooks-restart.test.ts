import { beforeAll, expect, it } from 'vitest';
import { startReceiver } from '../http/webhooks-support.js';
import type { TestDatabase } from '../support/db.js';
import { call, useJobclockProcesses } from './support.js';

/**
 * Webhooks across a crash, with the real process: a receiver is down while 1,000 jobs finish,
 * jobclock is SIGKILLed while it delivers and started again, and every event still arrives at
 * least once. Real time is the subject here (retries after backoff, a claim's hold running out).
 */
const processes = useJobclockProcesses();
let tdb: TestDatabase;
const start = () => processes.start();
beforeAll(() => {
  tdb = processes.tdb();
});

async function counts(): Promise<{ delivered: number; pending: number }> {
  const { rows } = await tdb.db.pool.query(
    `SELECT count(*) FILTER (WHERE status = 'delivered')::int AS delivered,
            count(*) FILTER (WHERE status = 'pending')::int
              + (SELECT coalesce(sum(cardinality(subjects) * cardinality(webhook_ids)), 0)::int FROM webhook_event) AS pending
       FROM webhook_delivery`,
  );
  return rows[0];
}

it('delivers every event at least once to a receiver that was down, across a SIGKILL and a restart', async () => {
  const probe = await startReceiver();
  const port = probe.port;
  await probe.close(); // down while the events happen

  const first = await start();
  await call(first.base, 'POST', '/webhooks', { url: `http://127.0.0.1:${port}/hook`, events: ['job.finished'] });
  await call(first.base, 'POST', '/jobs/batch', { jobs: Array.from({ length: 1000 }, (_, i) => ({ type: 'crash', args: { i } })) });
  for (let i = 0; i < 10; i++) {
    const { jobs } = await call(first.base, 'POST', '/jobs/next', { worker: 'w', types: ['crash'], limit: 100 });
    await call(first.base, 'POST', '/jobs/reports', {
      reports: jobs.map((j: { id: string; leaseToken: string }) => ({ id: j.id, leaseToken: j.leaseToken, outcome: 'finished' })),
    });
  }
  expect((await counts()).pending).toBe(1000);

  // the receiver comes back, slowly: jobclock is killed while it delivers
  const receiver = await startReceiver({ port });
  receiver.answer = () => ({ status: 200, delayMs: 20 });
  await receiver.received(150);
  first.child.kill('SIGKILL');
  await new Promise((r) => first.child.once('exit', r));
  const beforeRestart = receiver.requests.length;

  const second = await start();
  const t0 = Date.now();
  let c = await counts();
  while (c.delivered < 1000 && Date.now() - t0 < 90_000) {
    await new Promise((r) => setTimeout(r, 250));
    c = await counts();
  }
  second.child.kill('SIGTERM');
  await new Promise((r) => second.child.once('exit', r));
  await receiver.close();

  expect(c).toEqual({ delivered: 1000, pending: 0 });
  const perJob = new Map<string, number>();
  for (const r of receiver.requests) {
    const id = JSON.parse(r.raw).job.id as string;
    perJob.set(id, (perJob.get(id) ?? 0) + 1);
  }
  expect(perJob.size).toBe(1000);
  const duplicates = receiver.requests.length - 1000;
  // only the attempts in flight when the process was killed can arrive twice: at most 64
  expect(duplicates).toBeLessThanOrEqual(64);
  console.log(
    `webhooks across a SIGKILL: ${receiver.requests.length} requests for 1000 events (${duplicates} duplicates; ${beforeRestart} before the kill)`,
  );
}, 180_000);
