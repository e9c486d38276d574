/**
 * The Python package clients/python (jobclock_worker) against the real app on a real HTTP server:
 * it is installed with `pip install --no-index ./clients/python` into a fresh venv (as CI does; no
 * index is needed), whose python runs test/clients/python/driver.py, which records every handler
 * execution in a file of events.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LeaseReaper } from '../../src/scheduler/lease-reaper.js';
import { bearer, type TestStack, TOKENS } from '../support/app.js';
import { useTestStack } from '../support/fixture.js';
import { peakOverlap } from '../support/overlap.js';
import { requireTool } from '../support/tools.js';

/** The interpreter that makes the venv: python3, or JOBCLOCK_TEST_PYTHON (e.g. python3.9, the oldest the package supports). */
const SYSTEM_PYTHON = process.env.JOBCLOCK_TEST_PYTHON ?? 'python3';
const pythonTool = requireTool(
  SYSTEM_PYTHON,
  spawnSync(SYSTEM_PYTHON, ['-c', 'import venv, ensurepip'], { encoding: 'utf8' }).status === 0,
  `\`${SYSTEM_PYTHON} -c "import venv, ensurepip"\` failed (apt-get install python3 python3-venv)`,
);
/** The venv's python, once beforeAll has installed the package into it. */
let PYTHON = '';
const DRIVER = join(import.meta.dirname, 'python', 'driver.py');
/** No __pycache__ folders in the checkout. */
const PY_ENV = { ...process.env, PYTHONDONTWRITEBYTECODE: '1' };
const WORKER_TOKEN = TOKENS.find((t) => t.role === 'worker')!.token;

/** Why the package or driver could not be made (each test fails with it). */
let setupError: Error | null = null;
let stack: TestStack;
let base = '';
let reaper: LeaseReaper;
let dir = '';
useTestStack({ tokens: TOKENS, clean: ['job', 'periodic_task'] }, (f) => ({ stack } = f));

beforeAll(async () => {
  await stack.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(stack.app.server.address() as AddressInfo).port}`;
  reaper = new LeaseReaper(stack.ctx, { intervalMs: 200 });
  reaper.start();
  dir = mkdtempSync(join(tmpdir(), 'jobclock-py-'));
  // a failing beforeAll would mark the tests skipped: a setup error fails each test instead
  if (pythonTool.found) {
    try {
      PYTHON = installPackage(join(dir, 'venv'));
    } catch (err) {
      setupError = err as Error;
    }
  }
}, 120_000);

/** `python3 -m venv` and `pip install --no-index ./clients/python`: the venv's python. */
function installPackage(venv: string): string {
  const root = join(import.meta.dirname, '..', '..');
  const made = spawnSync(SYSTEM_PYTHON, ['-m', 'venv', venv], { encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`${SYSTEM_PYTHON} -m venv failed:\n${made.stderr}`);
  const python = join(venv, 'bin', 'python');
  const pip = spawnSync(python, ['-m', 'pip', 'install', '--no-index', '--isolated', '--disable-pip-version-check', './clients/python'], {
    cwd: root,
    encoding: 'utf8',
    env: PY_ENV,
  });
  if (pip.status !== 0) throw new Error(`pip install ./clients/python failed:\n${pip.stdout}\n${pip.stderr}`);
  return python;
}
afterAll(async () => {
  for (const d of drivers) if (d.proc.exitCode === null && d.proc.signalCode === null) d.proc.kill('SIGKILL'); // a failed test's
  await reaper?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

type Event = { event: string; id?: string; [k: string]: unknown };

interface Driver {
  proc: ChildProcess;
  events(): Event[];
  ran(): string[];
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
  stderr(): string;
}

let runs = 0;
const drivers: Driver[] = [];
function startDriver(scenario: string, ...extra: string[]): Driver {
  return startDriverAt(base, scenario, ...extra);
}

function startDriverAt(url: string, scenario: string, ...extra: string[]): Driver {
  const out = join(dir, `${scenario}-${++runs}.jsonl`);
  const proc = spawn(PYTHON, [DRIVER, scenario, url, WORKER_TOKEN, out, ...extra], { stdio: ['ignore', 'ignore', 'pipe'], env: PY_ENV });
  let err = '';
  proc.stderr!.on('data', (b: Buffer) => (err += b.toString()));
  const events = (): Event[] => {
    let text: string;
    try {
      text = readFileSync(out, 'utf8');
    } catch {
      return []; // not written yet
    }
    return text
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as Event);
  };
  const driver: Driver = {
    proc,
    events,
    ran: () => events().flatMap((e) => (e.event === 'ran' ? [e.id!] : [])),
    exited: new Promise((resolve) => proc.on('exit', (code) => resolve(code))),
    stderr: () => err,
  };
  drivers.push(driver);
  return driver;
}

async function stopDriver(d: Driver): Promise<number | null> {
  d.proc.kill('SIGTERM');
  const code = await d.exited;
  if (code !== 0) throw new Error(`the driver exited ${code}:\n${d.stderr()}`);
  return code;
}

async function until<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(base + path, {
    method,
    headers: { authorization: bearer('admin'), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function job(id: string): Promise<Record<string, any>> {
  const res = await call('GET', `/jobs/${id}`);
  expect(res.status).toBe(200);
  return res.body;
}

/** Every job GET /jobs finds for the query, through its pages. */
async function allJobs(query: string): Promise<Record<string, any>[]> {
  const items: Record<string, any>[] = [];
  let cursor: string | null = null;
  do {
    const page: { body: { items: Record<string, any>[]; nextCursor: string | null } } = await call(
      'GET',
      `/jobs?${query}&limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    items.push(...page.body.items);
    cursor = page.body.nextCursor;
  } while (cursor);
  return items;
}

async function events(id: string): Promise<Record<string, any>[]> {
  return (await call('GET', `/jobs/${id}/events`)).body.items;
}

describe.skipIf(pythonTool.skip)('the Python worker (the jobclock_worker package, clients/python)', () => {
  beforeEach(() => {
    pythonTool.assert();
    if (setupError) throw setupError;
  });

  it('passes its unit tests (durations, backoff, what a return value or an exception reports)', () => {
    const run = spawnSync(PYTHON, ['-m', 'unittest', 'test_jobclock_worker'], {
      env: PY_ENV,
      cwd: join(import.meta.dirname, 'python'),
      encoding: 'utf8',
    });
    expect(run.status, run.stderr).toBe(0);
    expect(Number(/Ran (\d+) tests/.exec(run.stderr)?.[1])).toBeGreaterThanOrEqual(20);
  });

  it('runs 2,000 jobs through 2 workers exactly once each, one stopped by SIGTERM midway', async () => {
    const a = startDriver('count');
    const b = startDriver('count');
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const jobs = Array.from({ length: 1000 }, (_, k) => ({ type: 'py.count', args: { i: i * 1000 + k } }));
      const created = await call('POST', '/jobs/batch', { jobs });
      expect(created.status).toBe(201);
      ids.push(...created.body.jobs.map((j: { id: string }) => j.id));
    }
    // a is stopped while both are busy: what it runs it reports, what it leased and did not start it gives back
    await until('a to have run 300 jobs', () => a.ran().length >= 300, 30_000);
    await stopDriver(a);
    const byA = a.ran().length;
    await until('2,000 jobs finished', async () => (await allJobs('type=py.count&state=finished')).length === 2000, 60_000);
    await stopDriver(b);
    const ran = [...a.ran(), ...b.ran()].sort();
    expect(ran).toEqual([...ids].sort());
    expect(new Set(ran).size).toBe(2000);
    expect(byA).toBeLessThan(2000);
    expect(b.ran().length).toBeGreaterThan(0);
    // each job ran once: one attempt (a give-back does not count one), its result names the worker that ran it
    for (const j of await allJobs('type=py.count')) {
      expect(j).toMatchObject({ state: 'finished', attempts: 1 });
      expect(j.result.by).toBe(j.worker);
    }
    const stats = [a, b].map((d) => d.events().find((e) => e.event === 'stopped')!.stats as Record<string, number>);
    expect(stats.reduce((n, s) => n + s.finished!, 0)).toBe(2000);
    expect(stats.every((s) => s.lost === 0)).toBe(true);
  }, 90_000);

  it('leases its next jobs with its reports, so a binding limit passes its slots on without a long-poll', async () => {
    expect((await call('PATCH', '/types/py.limited', { concurrency: 3 })).status).toBe(200);
    try {
      const leaseRequests = async () => {
        const text = await (await fetch(`${base}/metrics`, { headers: { authorization: bearer('admin') } })).text();
        const counts = [...text.matchAll(/^jobclock_http_request_duration_seconds_count\{[^}]*route="\/jobs\/next"[^}]*\} (\d+)/gm)];
        return counts.reduce((sum, m) => sum + Number(m[1]), 0);
      };
      const before = await leaseRequests();
      const d = startDriver('limited');
      const created = await call('POST', '/jobs/batch', { jobs: Array.from({ length: 60 }, () => ({ type: 'py.limited' })) });
      expect(created.status).toBe(201);
      await until('60 jobs finished', async () => {
        const res = await call('GET', '/jobs?type=py.limited&state=finished&limit=100');
        return res.body.items.length === 60;
      });
      await stopDriver(d);
      expect(new Set(d.ran()).size).toBe(60);
      // 20 long-polls at least without next (3 jobs a turn); with it, the reports lease nearly all
      expect((await leaseRequests()) - before, 'POST /jobs/next requests for 60 jobs').toBeLessThan(10);
      const jobs = (await call('GET', '/jobs?type=py.limited&limit=100')).body.items as { startedAt: string; finishedAt: string }[];
      expect(peakOverlap(jobs), 'overlaps of startedAt..finishedAt').toBeLessThanOrEqual(3);
    } finally {
      await call('PATCH', '/types/py.limited', { concurrency: null });
    }
  });

  it('retries leasing and reports through 503s and dropped connections, losing no job', async () => {
    // a proxy in front of the server: the first 3 lease requests and the first 2 report requests
    // answer 503, the 4th lease request and the 3rd report request lose their connection
    const seen = { lease: 0, reports: 0 };
    const proxy: Server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const kind = req.url === '/jobs/next' ? 'lease' : req.url === '/jobs/reports' ? 'reports' : null;
        const n = kind ? ++seen[kind] : 0;
        const fail503 = (kind === 'lease' && n <= 3) || (kind === 'reports' && n <= 2);
        const drop = (kind === 'lease' && n === 4) || (kind === 'reports' && n === 3);
        if (fail503) {
          res.writeHead(503, { 'content-type': 'application/problem+json' });
          res.end(
            JSON.stringify({ type: 'about:blank', title: 'Service Unavailable', status: 503, detail: 'the database is unreachable' }),
          );
          return;
        }
        if (drop) {
          req.socket.destroy();
          return;
        }
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(req.headers))
          if (typeof v === 'string' && k !== 'host' && k !== 'content-length') headers[k] = v;
        fetch(base + req.url!, { method: req.method, headers, body: chunks.length ? Buffer.concat(chunks) : undefined })
          .then(async (r) => {
            const body = Buffer.from(await r.arrayBuffer());
            res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' });
            res.end(body);
          })
          .catch(() => req.socket.destroy());
      });
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    try {
      const created = await call('POST', '/jobs/batch', { jobs: Array.from({ length: 20 }, () => ({ type: 'py.count' })) });
      const d = startDriverAt(`http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, 'count');
      await until(
        '20 jobs finished',
        async () => (await call('GET', '/jobs?type=py.count&state=finished&limit=100')).body.items.length === 20,
      );
      await stopDriver(d);
      expect([...d.ran()].sort()).toEqual(created.body.jobs.map((j: { id: string }) => j.id).sort());
      expect(seen.lease).toBeGreaterThan(4);
      expect(seen.reports).toBeGreaterThan(3);
      expect(d.stderr()).toContain('lease failed');
      expect(d.stderr()).toContain('reports failed');
      const stats = d.events().find((e) => e.event === 'stopped')!.stats as Record<string, number>;
      expect(stats).toMatchObject({ leased: 20, finished: 20, lost: 0 });
    } finally {
      proxy.closeAllConnections();
      await new Promise((r) => proxy.close(r));
    }
  });

  it('keeps a 3 s job leased past its 1 s lease by heartbeats', async () => {
    const d = startDriver('long');
    const { body: created } = await call('POST', '/jobs', { type: 'py.long', args: { seconds: 3 } });
    await until('the job to start', () => d.ran().length === 1);
    const first = await job(created.id);
    const expiries = new Set<string>([first.leaseExpiresAt]);
    const end = Date.now() + 2_000;
    while (Date.now() < end) {
      const j = await job(created.id);
      expect(j.state).toBe('running');
      expiries.add(j.leaseExpiresAt);
      await new Promise((r) => setTimeout(r, 200));
    }
    const done = await until('the job to finish', async () => {
      const j = await job(created.id);
      return j.state === 'finished' && j;
    });
    await stopDriver(d);
    expect(done).toMatchObject({ attempts: 1, result: { slept: 3 } });
    expect(Date.parse(done.finishedAt) - Date.parse(done.startedAt)).toBeGreaterThanOrEqual(3_000);
    expect(expiries.size).toBeGreaterThanOrEqual(4); // a heartbeat about every 1/3 s moved the expiry
    expect((await events(created.id)).map((e) => e.kind)).toEqual(['created', 'leased', 'finished']); // no expired lease, no requeue
  });

  it('sets ctx.cancelled when the job is cancelled while it runs, and the worker reports', async () => {
    const d = startDriver('cancel');
    const { body: created } = await call('POST', '/jobs', { type: 'py.cancel' });
    await until('the job to start', () => d.ran().length === 1);
    const t0 = Date.now();
    expect((await call('POST', `/jobs/${created.id}/cancel`)).status).toBe(200);
    const ev = await until('the handler to see the cancel', () => d.events().find((e) => e.event === 'cancelled'));
    expect(ev.reason).toBe('cancel');
    // a 3 s lease: a heartbeat every second, and the cancel arrives with the next one
    expect(Date.now() - t0).toBeLessThan(3_000);
    // stop() sends the report before it returns: accepted (200, counted as finished), the job stays cancelled
    await stopDriver(d);
    const stats = d.events().find((e) => e.event === 'stopped')!.stats as Record<string, number>;
    expect(stats).toMatchObject({ leased: 1, finished: 1, lost: 0, given_back: 0 });
    expect(await job(created.id)).toMatchObject({ state: 'cancelled', attempts: 1 });
    expect((await events(created.id)).map((e) => e.kind)).toContain('cancelled');
  });

  it('sets ctx.cancelled when the deadline passes, and the report inside the grace is accepted', async () => {
    const d = startDriver('cancel');
    const { body: created } = await call('POST', '/jobs', { type: 'py.deadline', timebox: '1s' });
    const ev = await until('the handler to see the deadline', () => d.events().find((e) => e.event === 'cancelled'));
    expect(ev.reason).toBe('deadline');
    const done = await until('the report', async () => {
      const j = await job(created.id);
      return j.state !== 'running' && j;
    });
    await stopDriver(d);
    expect(done).toMatchObject({ state: 'finished', attempts: 1, result: { cancelled: true, reason: 'deadline' } });
    const ranFor = Date.parse(done.finishedAt) - Date.parse(done.startedAt);
    expect(ranFor).toBeGreaterThanOrEqual(1_000);
    expect(ranFor).toBeLessThan(1_000 + 1_000); // inside the grace (10% of the timebox, at least 1 s)
  });

  it('hands state saved by one run of a periodic task to the next as taskState', async () => {
    const d = startDriver('periodic');
    expect((await call('POST', '/periodic-tasks', { id: 'py-state', task: 'py.periodic', schedule: 'every 1h' })).status).toBe(201);
    const results: Record<string, any>[] = [];
    for (let run = 1; run <= 3; run++) {
      const trig = await call('POST', '/periodic-tasks/py-state/trigger');
      expect(trig.status).toBe(201);
      results.push(
        await until(`run ${run} to finish`, async () => {
          const j = await job(trig.body.id);
          return j.state === 'finished' && j;
        }),
      );
    }
    await stopDriver(d);
    expect(results.map((j) => j.result)).toEqual([{ run: 1 }, { run: 2 }, { run: 3 }]);
    expect(d.events().flatMap((e) => (e.event === 'ran' ? [e.taskState] : []))).toEqual([null, { runs: 1 }, { runs: 2 }]);
  });

  it('stop() sets ctx.cancelled, waits for running handlers up to its timeout, then gives back the rest: none stays running', async () => {
    const d = startDriver('stop', '5');
    await until('the worker to start', () => d.events().some((e) => e.event === 'ready'));
    const quick = await call('POST', '/jobs/batch', { jobs: [1, 2, 3].map(() => ({ type: 'py.quick' })) });
    const stubborn = await call('POST', '/jobs/batch', { jobs: [1, 2].map(() => ({ type: 'py.stubborn' })) });
    const code = await d.exited;
    expect(code, d.stderr()).toBe(0);
    const stopped = d.events().find((e) => e.event === 'stopped')!;
    expect(stopped.seconds).toBeGreaterThanOrEqual(1.4);
    expect(stopped.seconds).toBeLessThan(5);
    expect(stopped.stats).toMatchObject({ leased: 5, finished: 3, given_back: 2, lost: 0 });
    for (const j of quick.body.jobs)
      expect(await job(j.id)).toMatchObject({ state: 'finished', result: { quick: true, reason: 'stopping' } });
    for (const j of stubborn.body.jobs) {
      const now = await job(j.id);
      expect(now).toMatchObject({ state: 'queued', attempts: 0 }); // given back: the attempt is not counted
      expect(Date.parse(now.runAt)).toBeLessThanOrEqual(Date.now()); // runnable again at once
    }
    expect((await call('GET', '/jobs?state=running')).body.items).toEqual([]);
  });

  it('reports failed with retryIn when a handler raises RetryLater, and the job is queued again', async () => {
    const d = startDriver('retry');
    const { body: created } = await call('POST', '/jobs', { type: 'py.busy' });
    const failed = await until('the failure report', async () => {
      const j = await job(created.id);
      return j.state === 'queued' && j.attempts === 1 && j;
    });
    await stopDriver(d);
    expect(d.ran()).toEqual([created.id]);
    expect(failed.error).toEqual({ message: 'the upstream is busy', type: 'RetryLater' });
    const delay = Date.parse(failed.runAt) - Date.parse(failed.updatedAt);
    expect(delay).toBeGreaterThanOrEqual(29_000);
    expect(delay).toBeLessThanOrEqual(31_000);
    const history = await events(created.id);
    expect(history.map((e) => e.kind)).toEqual(['created', 'leased', 'requeued']);
    expect(history[2]).toMatchObject({ attempt: 1, detail: { error: { message: 'the upstream is busy' } } });
  });
  it("hands a merge step its pages' results through ctx.dependencies", async () => {
    const d = startDriver('graph');
    const { body } = await call('POST', '/jobs/batch', {
      jobs: [
        ...[1, 2, 3].map((p) => ({ type: 'py.page', ref: `p${p}`, args: { page: p } })),
        { type: 'py.merge', after: ['p3', 'p1', 'p2'] },
      ],
    });
    const merged = await until('the merge', async () => {
      const j = await job(body.jobs[3].id);
      return j.state === 'finished' && j;
    });
    await stopDriver(d);
    expect(merged.result).toEqual({ urls: ['s3://pdf/3', 's3://pdf/1', 's3://pdf/2'] });
  });

  it('reports a final failure: failed for good, or a plain failure on a server without final', async () => {
    const d = startDriver('retry');
    const { body: created } = await call('POST', '/jobs', { type: 'py.final', maxAttempts: 3 });
    const done = await until('the failure report', async () => {
      const j = await job(created.id);
      return j.state !== 'running' && j.attempts === 1 && j;
    });
    await stopDriver(d);
    expect(d.ran()).toEqual([created.id]);
    expect(done.error).toMatchObject({ message: 'the arguments can never work', type: 'FinalFailure' });
    // a server that knows final fails the job for good; one that does not queues it again (attempts left)
    expect(['failed', 'queued']).toContain(done.state);
    if (done.state === 'queued') expect(d.stderr()).toContain('jobclock does not take final on reports');
  });

  it('gives a Snooze back to run after its retryIn, the attempt not counted, and hands the saved state as checkpoint', async () => {
    const d = startDriver('retry');
    const { body: created } = await call('POST', '/jobs', { type: 'py.sleepy', maxAttempts: 1 });
    const snoozed = await until('the give-back', async () => {
      const j = await job(created.id);
      return j.state === 'queued' && j.checkpoint !== null && j;
    });
    expect(snoozed).toMatchObject({ attempts: 0, checkpoint: { page: 3 } });
    const inMs = Date.parse(snoozed.runAt) - Date.parse(snoozed.updatedAt);
    expect(inMs).toBeGreaterThanOrEqual(3_599_000);
    expect(inMs).toBeLessThanOrEqual(3_600_000);
    expect((await events(created.id)).map((e) => e.kind)).toEqual(['created', 'leased', 'given-back']);
    // due now: the next attempt (its first counted one) resumes from the checkpoint
    await call('PATCH', `/jobs/${created.id}`, { runAt: new Date().toISOString() });
    const done = await until('the finish', async () => {
      const j = await job(created.id);
      return j.state === 'finished' && j;
    });
    await stopDriver(d);
    expect(done).toMatchObject({ attempts: 1, result: { resumed: { page: 3 } } });
  });

  it('reports a job failed when jobclock refuses its report, without losing the others of the batch', async () => {
    const created = await call('POST', '/jobs/batch', {
      jobs: [...Array.from({ length: 10 }, () => ({ type: 'py.count' })), { type: 'py.deep', maxAttempts: 1 }],
    });
    const d = startDriver('retry');
    const ids: string[] = created.body.jobs.map((j: { id: string }) => j.id);
    const deepId = ids[10]!;
    await until('all reported', async () => {
      const states = await Promise.all(ids.map(async (id) => (await job(id)).state));
      return states.every((s) => s !== 'running' && s !== 'queued');
    });
    await stopDriver(d);
    for (const id of ids.slice(0, 10)) expect(await job(id)).toMatchObject({ state: 'finished', attempts: 1 });
    const deep = await job(deepId);
    expect(deep).toMatchObject({ state: 'failed', attempts: 1, error: { kind: 'report-refused' } });
    expect(deep.error.message).toMatch(/^jobclock refused the report \(400\)/);
    expect(d.stderr()).toContain(`job ${deepId}: jobclock refused the report`);
  });
});
