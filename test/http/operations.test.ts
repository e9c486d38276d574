/** GET /metrics (Prometheus) and GET /stats/throughput, after a known sequence of jobs. */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { PeriodicScheduler } from '../../src/scheduler/periodic-scheduler.js';
import { bearer, TOKENS } from '../support/app.js';
import { type TestDatabase } from '../support/db.js';
import { type JobsApi } from './jobs-support.js';
import { useJobsApi } from '../support/fixture.js';

const T0 = '2026-11-20T09:00:00.000Z';
const clock = new ManualClock(T0);
const at = (ms: number) => new Date(Date.parse(T0) + ms);
const admin = bearer('admin');
let tdb: TestDatabase;
let api: JobsApi;

useJobsApi({ clock, tokens: TOKENS }, (f) => ({ tdb, api } = f));

/** The value of one series in the exposition text, or undefined. */
function series(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = (m[2] ?? '').split(',').filter(Boolean);
    if (want.every((w) => have.includes(w)) && have.length === want.length) return Number(m[3]);
  }
  return undefined;
}

describe('GET /metrics', () => {
  it('counts what happened: leases, outcomes, open jobs by state, lease wait, lateness, requests', async () => {
    for (let i = 0; i < 3; i++) expect((await api.post('/jobs', { type: 'm.a', maxAttempts: 1 }, admin)).status).toBe(201);
    await api.post('/jobs', { type: 'm.b', runAt: at(3_600_000).toISOString() }, admin);
    clock.set(at(2_000)); // runnable since T0: each lease waited 2 s
    const leased = await api.post('/jobs/next', { worker: 'w', types: ['m.a'], limit: 2 }, admin);
    const [j1, j2] = leased.body.jobs;
    await api.post(`/jobs/${j1.id}/finished`, { leaseToken: j1.leaseToken }, admin);
    await api.post('/jobs/reports', { reports: [{ id: j2.id, leaseToken: j2.leaseToken, outcome: 'failed', error: 'x' }] }, admin);
    await api.stack.services.tasks.create({ id: 'm.task', task: 'm.p', schedule: 'every 1m' });
    clock.set(at(2_000 + 60_000 + 250)); // 250 ms after the task's first run (creation + 1 min), a tick submits it
    await new PeriodicScheduler(api.stack.ctx).tick(clock.now());

    const res = await api.get('/metrics', bearer('reader'));
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    const text = res.text;
    expect(series(text, 'jobclock_jobs_leased_total', { type: 'm.a' })).toBe(2);
    expect(series(text, 'jobclock_jobs_completed_total', { type: 'm.a', outcome: 'finished' })).toBe(1);
    expect(series(text, 'jobclock_jobs_completed_total', { type: 'm.a', outcome: 'failed' })).toBe(1);
    expect(series(text, 'jobclock_jobs', { type: 'm.a', state: 'queued' })).toBe(1);
    expect(series(text, 'jobclock_jobs', { type: 'm.a', state: 'running' })).toBe(0);
    expect(series(text, 'jobclock_jobs', { type: 'm.b', state: 'scheduled' })).toBe(1);
    expect(series(text, 'jobclock_jobs', { type: 'm.p', state: 'queued' })).toBe(1);
    expect(series(text, 'jobclock_oldest_queued_seconds', { type: 'm.a' })).toBeCloseTo(62.25, 3);
    expect(series(text, 'jobclock_lease_wait_seconds_count')).toBe(2);
    expect(series(text, 'jobclock_lease_wait_seconds_sum')).toBe(4);
    expect(series(text, 'jobclock_periodic_lateness_seconds_count')).toBe(1);
    expect(series(text, 'jobclock_periodic_lateness_seconds_sum')).toBeCloseTo(0.25, 3);
    expect(series(text, 'jobclock_http_request_duration_seconds_count', { route: '/jobs/next', method: 'POST', status: '200' })).toBe(1);
    expect(text).toMatch(/^jobclock_process_resident_memory_bytes \d+/m);
  });

  it('is open to any role but not without a token', async () => {
    expect((await api.get('/metrics')).status).toBe(401);
    for (const role of ['admin', 'worker', 'producer', 'reader'] as const)
      expect((await api.get('/metrics', bearer(role))).status).toBe(200);
  });
});

describe('GET /stats/throughput', () => {
  it('counts finished and failed jobs per minute, oldest first, with a bucket for every minute', async () => {
    clock.set('2026-11-20T10:00:30.000Z');
    await tdb.db.pool.query(
      `INSERT INTO job (type, state, run_at, finished_at) VALUES
         ('t.a', 'finished', $1, '2026-11-20T09:58:10Z'), ('t.a', 'finished', $1, '2026-11-20T09:58:50Z'),
         ('t.b', 'failed',   $1, '2026-11-20T09:58:20Z'), ('t.a', 'finished', $1, '2026-11-20T10:00:05Z'),
         ('t.a', 'finished', $1, '2026-11-20T09:40:00Z')`,
      [T0],
    );
    const res = await api.get('/stats/throughput?minutes=3', admin);
    expect(res.status).toBe(200);
    expect(res.body.buckets).toEqual([
      { at: '2026-11-20T09:58:00.000Z', finished: 2, failed: 1 },
      { at: '2026-11-20T09:59:00.000Z', finished: 0, failed: 0 },
      { at: '2026-11-20T10:00:00.000Z', finished: 1, failed: 0 },
    ]);
    const typed = await api.get('/stats/throughput?minutes=3&type=t.b', admin);
    expect(typed.body.buckets.map((b: { failed: number }) => b.failed)).toEqual([1, 0, 0]);
    expect((await api.get('/stats/throughput?minutes=0', admin)).status).toBe(400);
    expect((await api.get('/stats/throughput?minutes=15&x=1', admin)).status).toBe(400);
  });
});
