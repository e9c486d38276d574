import { execFile, spawn } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

/**
 * A short `npm run chaos` (chaos/run.ts): three processes on one PostgreSQL under load while
 * backends are cut, an instance is SIGKILLed and PostgreSQL restarts. Compiled into a folder of its
 * own (dist/chaos-test) so that it never rewrites files another process test is starting from.
 */
const root = path.resolve(import.meta.dirname, '../..');
const out = path.join(root, 'dist/chaos-test');

it('loses no job and finishes none twice through backend cuts, a SIGKILLed instance and a PostgreSQL restart', async () => {
  await promisify(execFile)(
    process.execPath,
    [
      path.join(root, 'node_modules/typescript/bin/tsc'),
      '-p',
      'tsconfig.build.json',
      '--outDir',
      out,
      '--tsBuildInfoFile',
      path.join(out, '.tsbuildinfo'),
    ],
    { cwd: root },
  );
  const child = spawn(process.execPath, [path.join(out, 'chaos/run.js')], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', CHAOS_SECONDS: '25' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  expect(code, `${stdout}\n${stderr}`).toBe(0);
  const line = stdout.split('\n').find((l) => l.startsWith('CHAOS_RESULT '));
  expect(line, stdout).toBeDefined();
  const result = JSON.parse(line!.slice('CHAOS_RESULT '.length));
  expect(result).toMatchObject({
    lost: 0,
    doubled: 0,
    open: 0,
    duplicateSlots: 0,
    violations: 0,
    instanceKills: 1,
    instanceStops: 1,
    pgRestarts: 1,
  });
  expect(result.accepted).toBeGreaterThan(500);
  expect(result.terminatedBackends).toBeGreaterThan(0);
  expect(result.recoveryMs).not.toBeNull();
  expect(result.periodicJobs).toBeGreaterThan(100);
}, 170_000);
