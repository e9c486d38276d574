/**
 * The console at volume: 100,000 jobs (queued, scheduled, running, finished, failed, cancelled over
 * 40 types and 300 groups) and 1,000 periodic tasks, inserted with SQL. Each page is opened in the
 * browser and every API call it makes must answer in under 300 ms (resource timing of its fetches).
 *
 * The bound is held against each call's best time over up to three visits of its page, not its
 * first: on a loaded 2-core machine (browser, server, PostgreSQL and other work sharing it) a single
 * call can wait out someone else's time slice, while a query that reads what it should not (a walk
 * of the 100,000 jobs takes seconds) is slow on every visit. The best of three holds under load and
 * still fails such a query.
 */
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { TestDatabase } from '../support/db.js';
import type { TestStack } from '../support/app.js';
import { useTestStack } from '../support/fixture.js';
import { CHROMIUM_TOOL, SCREENSHOTS, launch, open, screenshot } from './support.js';

let tdb: TestDatabase;
let stack: TestStack;
useTestStack({}, (f) => ({ tdb, stack } = f));

const JOBS = 100_000;
const TASKS = 1_000;
const LIMIT_MS = 300;

let base = '';
let browser: Browser;
let page: Page;
const measured: Record<string, { url: string; ms: number }[]> = {};

async function seed(): Promise<void> {
  const pool = tdb.db.pool;
  // one task made through the API, copied by SQL under 999 more ids
  const res = await fetch(`${base}/periodic-tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ id: 'vol-task-0', task: 'vol-0', schedule: '*/5 * * * *' }),
  });
  expect(res.status).toBe(201);
  const { rows } = await pool.query<{ column_name: string }>(
    `SELECT column_name FROM information_schema.columns WHERE table_name = 'periodic_task' AND table_schema = current_schema() ORDER BY ordinal_position`,
  );
  const cols = rows.map((r) => r.column_name);
  const select = cols.map((c) => (c === 'id' ? `'vol-task-' || g` : c === 'task' ? `'vol-' || (g % 40)` : `"${c}"`));
  await pool.query(
    `INSERT INTO periodic_task (${cols.map((c) => `"${c}"`).join(', ')})
     SELECT ${select.join(', ')} FROM periodic_task, generate_series(1, ${TASKS - 1}) g WHERE id = 'vol-task-0'`,
  );
  await pool.query(
    `INSERT INTO job (type, group_, args, subject, state, run_at, attempts, max_attempts, worker, lease_token, lease_expires_at,
                      started_at, finished_at, result, error, periodic_task_id, created_at, updated_at)
     SELECT 'vol-' || (g % 40), 'tenant:' || (g % 300), jsonb_build_object('n', g, 'customer', 'c-' || (g % 5000)), 'order ' || g,
            s.state,
            CASE WHEN g % 100 BETWEEN 30 AND 34 THEN now() + (g % 3600) * interval '1 s' ELSE t END,
            CASE WHEN s.state IN ('queued', 'cancelled') THEN 0 ELSE 1 END, 1,
            CASE WHEN s.state IN ('running', 'finished', 'failed') THEN 'w-' || (g % 50) END,
            CASE WHEN s.state <> 'queued' AND s.state <> 'cancelled' THEN gen_random_uuid() END,
            CASE WHEN s.state = 'running' THEN now() + interval '1 hour' END,
            CASE WHEN s.state IN ('running', 'finished', 'failed') THEN t END,
            CASE WHEN s.state IN ('finished', 'failed', 'cancelled') THEN t + interval '20 ms' END,
            CASE WHEN s.state = 'finished' THEN '{"ok":true}'::jsonb END,
            CASE WHEN s.state = 'failed' THEN jsonb_build_object('message', 'upstream said no to ' || g) END,
            CASE WHEN g % 10 = 0 THEN 'vol-task-' || (g % ${TASKS}) END,
            t, t
       FROM generate_series(1, ${JOBS}) g,
            LATERAL (SELECT now() - (g % 3600) * interval '1 s' AS t) x,
            LATERAL (SELECT CASE WHEN g % 100 < 35 THEN 'queued' WHEN g % 100 = 35 THEN 'running'
                                 WHEN g % 100 BETWEEN 36 AND 40 THEN 'failed' WHEN g % 100 = 41 THEN 'cancelled'
                                 ELSE 'finished' END AS state) s`,
  );
  await pool.query('VACUUM (ANALYZE) job');
  await pool.query('VACUUM (ANALYZE) periodic_task');
}

const VISITS = 3;

/** Opens a page and returns the API calls it made, with their durations in the browser. */
async function visitOnce(hash: string): Promise<{ url: string; ms: number }[]> {
  await page.evaluate('performance.clearResourceTimings()');
  await open(page, base, hash);
  const entries = (await page.evaluate(
    `performance.getEntriesByType('resource').filter((e) => e.initiatorType === 'fetch').map((e) => ({ url: e.name.slice(${base.length}), ms: Math.round(e.duration) }))`,
  )) as { url: string; ms: number }[];
  expect(entries.length).toBeGreaterThan(0);
  return entries;
}

/**
 * Opens a page until every API call it makes has answered once under the limit, at most VISITS
 * times, and keeps each call's best time.
 */
async function visit(name: string, hash: string): Promise<{ url: string; ms: number }[]> {
  const best = new Map<string, number>();
  for (let i = 0; i < VISITS; i++) {
    for (const e of await visitOnce(hash)) best.set(e.url, Math.min(best.get(e.url) ?? Infinity, e.ms));
    if ([...best.values()].every((ms) => ms < LIMIT_MS)) break;
  }
  const entries = [...best].map(([url, ms]) => ({ url, ms }));
  measured[name] = entries;
  if (name === 'overview' || name === 'jobs' || name === 'tasks') await screenshot(page, `volume-${name}`);
  return entries;
}

describe.skipIf(CHROMIUM_TOOL.skip)('the console with 100,000 jobs and 1,000 periodic tasks', () => {
  beforeAll(async () => {
    if (!CHROMIUM_TOOL.found) return; // under CI=true each test fails in beforeEach instead
    base = await stack.app.listen({ host: '127.0.0.1', port: 0 });
    await seed();
    browser = await launch();
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await open(page, base, '#/'); // warm up: connections, the page's own files
  });
  beforeEach(() => CHROMIUM_TOOL.assert());
  afterAll(async () => {
    await browser?.close();
    mkdirSync(SCREENSHOTS, { recursive: true });
    writeFileSync(join(SCREENSHOTS, 'volume-timings.json'), JSON.stringify(measured, null, 2));
    console.log('API calls per page at 100,000 jobs / 1,000 tasks (ms):\n' + JSON.stringify(measured, null, 1));
  });

  it('every page answers each of its API calls in under 300 ms, at best of three visits', async () => {
    const { rows } = await tdb.db.pool.query<{ id: string }>(`SELECT id::text FROM job WHERE state = 'failed' ORDER BY id DESC LIMIT 1`);
    const pages: [string, string][] = [
      ['overview', '#/'],
      ['jobs', '#/jobs'],
      ['jobs failed of a type', '#/jobs?state=failed&type=vol-7'],
      ['jobs of a group', '#/jobs?group=tenant%3A17'],
      ['jobs of a periodic task', '#/jobs?periodicTaskId=vol-task-20'],
      ['jobs by text', '#/jobs?q=said%20no%20to%2099'],
      ['jobs by args', `#/jobs?argsContains=${encodeURIComponent('{"customer":"c-42"}')}`],
      ['job', `#/jobs/${rows[0]!.id}`],
      ['tasks', '#/tasks'],
      ['task', '#/tasks/vol-task-500'],
    ];
    expect(await page.locator('#types tbody tr').count()).toBe(40);
    for (const [name, hash] of pages) await visit(name, hash);
    const slow = Object.entries(measured).flatMap(([name, calls]) =>
      calls.filter((c) => c.ms >= LIMIT_MS).map((c) => `${name}: ${c.url} ${c.ms} ms`),
    );
    expect(slow).toEqual([]);
  });
});
