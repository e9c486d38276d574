/** Real jobclock processes (dist/src/main.js) on a test database, for the multi-process tests. */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll } from 'vitest';
import { freePort } from '../../src/db/embedded.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

export const root = path.resolve(import.meta.dirname, '../..');

/** Builds dist/ (the processes run the build). */
export async function build(): Promise<void> {
  await promisify(execFile)(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
    cwd: root,
  });
}

/** Starts jobclock on `databaseUrl` (scheduler off) and waits until it is ready. */
export async function startJobclock(databaseUrl: string, children: ChildProcess[]): Promise<{ child: ChildProcess; base: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, [path.join(root, 'dist/src/main.js')], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', PORT: String(port), DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn', JOBCLOCK_SCHEDULER: 'off' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.push(child);
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error('jobclock exited early');
    const ok = await fetch(`${base}/readyz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return { child, base };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('jobclock not ready within 30 s');
}

/** A JSON call; throws on a status of 300 or more. */
export async function call(base: string, method: string, url: string, body?: unknown): Promise<any> {
  const res = await fetch(`${base}${url}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? null : JSON.stringify(body),
  });
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`);
  return res.status === 204 ? null : res.json();
}

/**
 * Registers the set-up of a multi-process test file: a build and a test database before, every
 * process started through `start` killed and the database dropped after.
 */
export function useJobclockProcesses(): { tdb: () => TestDatabase; start: () => Promise<{ child: ChildProcess; base: string }> } {
  let tdb: TestDatabase | undefined;
  const children: ChildProcess[] = [];
  beforeAll(async () => {
    await build();
    tdb = await createTestDatabase(2);
  }, 180_000);
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    await tdb?.destroy();
  });
  return { tdb: () => tdb!, start: () => startJobclock(tdb!.url, children) };
}
