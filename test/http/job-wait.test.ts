/** GET /jobs/{id}?wait: answered when the job ends, woken by NOTIFY from any instance. Real time is the subject. */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { type JobsApi, jobsApi } from './jobs-support.js';

let tdb: TestDatabase;
let a: JobsApi;
let b: JobsApi;

beforeAll(async () => {
  tdb = await createTestDatabase();
  a = await jobsApi({ db: tdb.db, instanceId: 'a' });
  b = await jobsApi({ db: tdb.connect(), instanceId: 'b' }); // a second instance: its own pool and listener
});
afterAll(async () => {
  await a?.stack.close();
  await b?.stack.close();
  await tdb?.destroy();
});
beforeEach(async () => {
  await tdb.db.pool.query('DELETE FROM job');
});

const endWaiters = (api: JobsApi) => api.stack.services.jobs['pipelines'].endWaiters!;

async function waiting(api: JobsApi, n: number) {
  const t0 = Date.now();
  while (endWaiters(api).size < n) {
    if (Date.now() - t0 > 5_000) throw new Error('nobody waits');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('GET /jobs/{id}?wait', () => {
  it('answers as soon as a report on another instance ends the job', async () => {
    const job = await a.create({ type: 'w' });
    const t0 = performance.now();
    const pending = a.get(`/jobs/${job.id}?wait=30s`);
    await waiting(a, 1);
    const [l] = await b.lease({ worker: 'w1' });
    await new Promise((r) => setTimeout(r, 200));
    await b.post(`/jobs/${l!.id}/finished`, { leaseToken: l!.leaseToken, result: { n: 42 } });
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: job.id, state: 'finished', result: { n: 42 } });
    expect(performance.now() - t0).toBeLessThan(5_000); // against a wait of 30 s
    expect(endWaiters(a).size).toBe(0);
  });

  it('goes on waiting through a requeue and answers at the final failure', async () => {
    const job = await a.create({ type: 'w', maxAttempts: 2 });
    const pending = a.get(`/jobs/${job.id}?wait=30s`);
    await waiting(a, 1);
    const [l1] = await b.lease({ worker: 'w1' });
    await b.post(`/jobs/${l1!.id}/failed`, { leaseToken: l1!.leaseToken, error: 'x', retryIn: '0s' });
    const [l2] = await b.lease({ worker: 'w1' });
    await b.post('/jobs/reports', { reports: [{ id: l2!.id, leaseToken: l2!.leaseToken, outcome: 'failed', error: 'y' }] });
    expect((await pending).body).toMatchObject({ state: 'failed', attempts: 2, error: 'y' });
  });

  it('answers with the job as it is when the wait runs out', async () => {
    const job = await a.create({ type: 'w' });
    const t0 = performance.now();
    const res = await a.get(`/jobs/${job.id}?wait=300ms`);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(290);
    expect(res.body).toMatchObject({ id: job.id, state: 'queued' });
  });

  it('answers a final job at once, and 404 for no job', async () => {
    const job = await a.create({ type: 'w' });
    await a.post(`/jobs/${job.id}/cancel`);
    const t0 = performance.now();
    expect((await a.get(`/jobs/${job.id}?wait=30s`)).body.state).toBe('cancelled');
    expect(performance.now() - t0).toBeLessThan(2_000);
    expect((await a.get('/jobs/999999?wait=1s')).status).toBe(404);
  });

  it('refuses a wait over 60 s, naming it', async () => {
    const job = await a.create({ type: 'w' });
    const res = await a.get(`/jobs/${job.id}?wait=61s`);
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toContain('wait');
  });

  it('bounds the waiting requests of an instance: one more is 503', async () => {
    const job = await a.create({ type: 'w' });
    const w = endWaiters(a) as unknown as { maxWaiting: number };
    const max = w.maxWaiting;
    Object.defineProperty(w, 'maxWaiting', { value: 1, configurable: true });
    try {
      const first = a.get(`/jobs/${job.id}?wait=1s`);
      await waiting(a, 1);
      expect((await a.get(`/jobs/${job.id}?wait=1s`)).status).toBe(503);
      expect((await first).status).toBe(200);
    } finally {
      Object.defineProperty(w, 'maxWaiting', { value: max, configurable: true });
    }
  });
});
