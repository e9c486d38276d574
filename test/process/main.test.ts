import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { ensureDatabase } from '../../src/db/database.js';
import { freePort, startEmbedded } from '../../src/db/embedded.js';
import { requireTool } from '../support/tools.js';

/**
 * The real process, as `npm start` runs it: compiled code, its own embedded PostgreSQL in a data
 * folder, signals. Slow-ish (a few seconds per start), so one file covers the whole life cycle.
 */
const root = path.resolve(import.meta.dirname, '../..');
let dataRoot: string;

beforeAll(async () => {
  await promisify(execFile)(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
    cwd: root,
  });
  dataRoot = await mkdtemp(path.join(os.tmpdir(), 'jobclock-process-'));
  await chmod(dataRoot, 0o755);
}, 120_000);

afterAll(async () => {
  if (dataRoot) await rm(dataRoot, { recursive: true, force: true });
});

interface Running {
  child: ChildProcess;
  port: number;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
}

async function start(env: Record<string, string> = {}): Promise<Running> {
  const port = await freePort();
  let out = '';
  const child = spawn(process.execPath, [path.join(root, 'dist/src/main.js')], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', PORT: String(port), JOBCLOCK_DATA_DIR: path.join(dataRoot, 'pg'), LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal, at: Date.now() })),
  );
  return { child, port, output: () => out, exited };
}

async function waitReady(r: Running, ms = 30_000): Promise<number> {
  const t0 = Date.now();
  while (Date.now() - t0 < ms) {
    if (r.child.exitCode !== null) throw new Error(`exited early:\n${r.output()}`);
    try {
      const res = await fetch(`http://127.0.0.1:${r.port}/readyz`);
      if (res.status === 200) return Date.now() - t0;
    } catch {
      /* not listening yet */
    }
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error(`not ready within ${ms} ms:\n${r.output()}`);
}

const api = (r: Running, method: string, url: string, body?: unknown) =>
  fetch(`http://127.0.0.1:${r.port}${url}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? null : JSON.stringify(body),
  });

describe('the jobclock process', () => {
  it('starts on an embedded PostgreSQL, keeps its data across restarts, and exits 0 on SIGTERM within 10 s', async () => {
    const first = await start();
    await waitReady(first); // throws unless /readyz answers 200 within 30 s
    const created = await api(first, 'POST', '/jobs', { type: 'persist.me', args: { n: 1 } });
    expect(created.status).toBe(201);
    const job = (await created.json()) as { id: string };

    const t0 = Date.now();
    first.child.kill('SIGTERM');
    const exit = await first.exited;
    expect(exit.code).toBe(0);
    expect(exit.at - t0).toBeLessThan(10_000);
    expect(first.output()).toMatch(/"msg":"stopped"/);

    // the second run with the SearchIndexFlusher (JOBCLOCK_SEARCH_FLUSH; what it merges: test/scheduler/search-flusher.test.ts)
    const second = await start({ JOBCLOCK_SEARCH_FLUSH: '200ms', LOG_LEVEL: 'debug' });
    await waitReady(second);
    const again = await api(second, 'GET', `/jobs/${job.id}`);
    expect(again.status).toBe(200);
    expect(((await again.json()) as { type: string }).type).toBe('persist.me');
    expect(second.output()).toMatch(/"searchFlushMs":200/);
    const leased = (await (await api(second, 'POST', '/jobs/next', { worker: 'w', types: ['persist.me'] })).json()) as {
      jobs: { id: string; leaseToken: string }[];
    };
    expect((await api(second, 'POST', `/jobs/${job.id}/finished`, { leaseToken: leased.jobs[0]!.leaseToken })).status).toBe(200);
    // found by content at once (its partition has not filled: on job itself, migration 0030)
    const found = (await (await api(second, 'GET', `/jobs?argsContains=${encodeURIComponent('{"n":1}')}`)).json()) as {
      items: { id: string }[];
    };
    expect(found.items.map((j) => j.id)).toEqual([job.id]);
    second.child.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);
  }, 90_000);

  it('recovers by itself after being killed with SIGKILL (which leaves PostgreSQL running)', async () => {
    const victim = await start();
    await waitReady(victim);
    victim.child.kill('SIGKILL');
    await victim.exited;

    const next = await start();
    await waitReady(next);
    expect(next.output()).toMatch(/stopping a PostgreSQL left running by a previous jobclock/);
    expect((await api(next, 'GET', '/jobs?limit=1')).status).toBe(200);
    next.child.kill('SIGTERM');
    expect((await next.exited).code).toBe(0);
  }, 90_000);

  it('refuses to start on a data folder a running jobclock uses, saying what to do', async () => {
    const owner = await start();
    await waitReady(owner);
    const intruder = await start();
    const exit = await intruder.exited;
    expect(exit.code).toBe(1);
    expect(intruder.output()).toMatch(/in use by another running jobclock.*JOBCLOCK_DATA_DIR/s);
    owner.child.kill('SIGTERM');
    expect((await owner.exited).code).toBe(0);
  }, 90_000);

  it('stops at start-up with a message naming a bad variable', async () => {
    const bad = await start({ PORT: 'eighty' });
    const exit = await bad.exited;
    expect(exit.code).toBe(2);
    expect(bad.output()).toMatch(/PORT: expected a whole number/);
  }, 30_000);

  it('lives through a PostgreSQL restart: 503 while it is gone, and the scheduler submits again within 1 s of its return', async () => {
    const dataDir = path.join(dataRoot, 'external');
    const port = await freePort();
    const settings = { fsync: 'off', synchronous_commit: 'off' };
    let server = await startEmbedded({ dataDir, port, settings });
    const url = await ensureDatabase(server.url, 'outage');
    const sql = new pg.Pool({ connectionString: url, max: 1 });
    sql.on('error', () => undefined);
    const app = await start({ DATABASE_URL: url });
    try {
      await waitReady(app);
      expect(
        (await api(app, 'POST', '/periodic-tasks', { id: 'beat', task: 'beat', schedule: 'every 1s', concurrencyPolicy: 'allow' })).status,
      ).toBe(201);
      const jobsSince = async (since: number) =>
        (await sql.query<{ first: Date | null }>('select min(created_at) as first from job where created_at > $1', [new Date(since)]))
          .rows[0]!.first;
      const before = Date.now();
      for (let i = 0; i < 60 && (await jobsSince(before)) === null; i++) await new Promise((r) => setTimeout(r, 100));
      expect(await jobsSince(before)).not.toBeNull();

      await server.stop();
      // long enough for doubling back-offs to outgrow the outage (they slept seconds past it)
      await new Promise((r) => setTimeout(r, 10_000));
      expect(app.child.exitCode).toBeNull();
      expect((await fetch(`http://127.0.0.1:${app.port}/healthz`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${app.port}/readyz`)).status).toBe(503);
      expect((await api(app, 'GET', '/jobs?limit=1')).status).toBe(503);

      server = await startEmbedded({ dataDir, port, settings });
      const back = Date.now();
      let first: Date | null = null;
      for (let i = 0; i < 100 && first === null; i++) {
        first = await jobsSince(back).catch(() => null);
        if (first === null) await new Promise((r) => setTimeout(r, 50));
      }
      expect(first).not.toBeNull();
      // the task was due all along: the first submission after the return measures the wake-up
      expect(first!.getTime() - back).toBeLessThan(1_000);
      expect(app.child.exitCode).toBeNull();
      expect((await fetch(`http://127.0.0.1:${app.port}/readyz`)).status).toBe(200);
      app.child.kill('SIGTERM');
      expect((await app.exited).code).toBe(0);
    } finally {
      if (app.child.exitCode === null) app.child.kill('SIGKILL');
      await sql.end();
      await server.stop();
    }
  }, 90_000);

  const haproxy = ['/usr/sbin/haproxy', '/usr/bin/haproxy', '/usr/local/sbin/haproxy'].find((p) => existsSync(p));
  const haproxyTool = requireTool('haproxy', haproxy !== undefined, 'the load-balancer test needs it (apt-get install haproxy)');

  it.skipIf(haproxyTool.skip)(
    'serves workers through HAProxy in front of 3 instances, and loses no job when one is SIGKILLed',
    async () => {
      haproxyTool.assert();
      const dataDir = path.join(dataRoot, 'lb');
      const server = await startEmbedded({ dataDir, settings: { fsync: 'off', synchronous_commit: 'off' } });
      const url = await ensureDatabase(server.url, 'lb');
      const sql = new pg.Pool({ connectionString: url, max: 1 });
      sql.on('error', () => undefined);
      const instances = [await start({ DATABASE_URL: url }), await start({ DATABASE_URL: url }), await start({ DATABASE_URL: url })];
      const lbPort = await freePort();
      const lb = spawn(haproxy!, ['-db', '-f', path.join(root, 'deploy/haproxy/haproxy.cfg')], {
        env: {
          PATH: process.env.PATH ?? '',
          JOBCLOCK_LB_PORT: String(lbPort),
          JOBCLOCK_PORT_1: String(instances[0]!.port),
          JOBCLOCK_PORT_2: String(instances[1]!.port),
          JOBCLOCK_PORT_3: String(instances[2]!.port),
        },
        stdio: 'ignore',
      });
      const base = `http://127.0.0.1:${lbPort}`;
      const call = async (method: string, p: string, body?: unknown) => {
        for (let attempt = 0; ; attempt++) {
          try {
            const res = await fetch(base + p, {
              method,
              headers: body === undefined ? {} : { 'content-type': 'application/json' },
              body: body === undefined ? null : JSON.stringify(body),
            });
            if (res.status < 500 || attempt >= 20) return res;
          } catch (err) {
            if (attempt >= 20) throw err;
          }
          await new Promise((r) => setTimeout(r, 100)); // a worker retries a 5xx or a cut connection
        }
      };
      try {
        await Promise.all(instances.map((i) => waitReady(i)));
        for (let i = 0; i < 50 && (await call('GET', '/readyz').catch(() => null))?.status !== 200; i++)
          await new Promise((r) => setTimeout(r, 100));
        const jobs = Array.from({ length: 300 }, (_, n) => ({ type: 'lb', args: { n } }));
        expect((await call('POST', '/jobs/batch', { jobs })).status).toBe(201);
        const executions = new Map<string, number>();
        let killed = false;
        const worker = async (w: number) => {
          for (let idle = 0; idle < 8;) {
            const res = await call('POST', '/jobs/next', { worker: `w${w}`, types: ['lb'], limit: 5, wait: '1s', lease: '3s' });
            if (res.status !== 200) {
              idle++;
              continue;
            }
            idle = 0;
            const got = ((await res.json()) as { jobs: { id: string; leaseToken: string }[] }).jobs;
            for (const j of got) executions.set(j.id, (executions.get(j.id) ?? 0) + 1);
            if (!killed && executions.size >= 100) {
              killed = true;
              instances[1]!.child.kill('SIGKILL');
            }
            const reports = got.map((j) => ({ id: j.id, leaseToken: j.leaseToken, outcome: 'finished' }));
            await call('POST', '/jobs/reports', { reports });
          }
        };
        await Promise.all(Array.from({ length: 6 }, (_, w) => worker(w)));
        expect(killed).toBe(true);
        const { rows } = await sql.query<{ state: string; n: number }>(`SELECT state, count(*)::int AS n FROM job GROUP BY state`);
        expect(rows).toEqual([{ state: 'finished', n: 300 }]); // none lost, none stuck
        expect(executions.size).toBe(300);
        // a job runs twice only when its lease was lost with the killed instance's answer and expired
        const twice = [...executions.values()].filter((n) => n > 1).length;
        expect(twice).toBeLessThanOrEqual(5);
        for (const i of [instances[0]!, instances[2]!]) expect(i.child.exitCode).toBeNull();
      } finally {
        lb.kill('SIGTERM');
        for (const i of instances) if (i.child.exitCode === null) i.child.kill('SIGTERM');
        await Promise.all(instances.map((i) => i.exited));
        await sql.end();
        await server.stop();
      }
    },
    120_000,
  );
});
