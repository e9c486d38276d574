import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestDatabase } from '../support/db.js';
import type { TestStack } from '../support/app.js';
import { useTestStack } from '../support/fixture.js';
import { callApi, CHROMIUM, launch, open, screenshot, settled } from './support.js';

let tdb: TestDatabase;
let stack: TestStack;
useTestStack({}, (f) => ({ tdb, stack } = f));

let base = '';
let browser: Browser;
let page: Page;

const call = (method: string, path: string, body?: unknown) => callApi(base, method, path, body);

const MIN = 60_000;
/** The outcomes of the last 12 slots of `flaky`, oldest first, as its history below leaves them. */
const HISTORY = [
  'finished',
  'finished',
  'missed',
  'missed',
  'finished',
  'skipped',
  'finished',
  'failed',
  'dropped',
  'cancelled',
  'failed',
  'failed',
];

describe.skipIf(!CHROMIUM)('task health and recent slots in the console', () => {
  beforeAll(async () => {
    base = await stack.app.listen({ host: '127.0.0.1', port: 0 });
    await call('POST', '/periodic-tasks', { id: 'flaky', task: 'sync.crm', schedule: 'every 1m', concurrencyPolicy: 'allow' });
    await call('POST', '/periodic-tasks', { id: 'steady', task: 'sync.erp', schedule: 'every 1h' });
    // the history a scheduler and workers would have left over the last 12 minutes: jobs of slots
    // ending as HISTORY says (through the outcome trigger, as reports would), and records of the
    // slots that got no job
    const start = Math.floor(Date.now() / MIN) * MIN - 12 * MIN;
    for (const [k, outcome] of HISTORY.entries()) {
      const slot = new Date(start + k * MIN).toISOString();
      if (outcome === 'missed' || outcome === 'skipped') {
        await tdb.db.pool.query(
          `INSERT INTO periodic_slot (task_id, slot, last_slot, outcome, job_id, recorded_at) VALUES ('flaky', $1, $1, $2, $3, $1)`,
          [slot, outcome, outcome === 'skipped' ? 1 : null],
        );
        continue;
      }
      const { rows } = await tdb.db.pool.query(
        `INSERT INTO job (type, periodic_task_id, scheduled_at, run_at, state, attempts, max_attempts, created_at, updated_at, lease_token, started_at)
         VALUES ('sync.crm', 'flaky', $1, $1, 'running', 1, 1, $1, $1, gen_random_uuid(), $1) RETURNING id`,
        [slot],
      );
      await tdb.db.pool.query(`UPDATE job SET state = $2, finished_at = run_at + interval '10 seconds' WHERE id = $1`, [
        rows[0].id,
        outcome,
      ]);
    }
    // the current slot's job is still running
    await tdb.db.pool.query(
      `INSERT INTO job (type, periodic_task_id, scheduled_at, run_at, state, attempts, max_attempts, created_at, updated_at, lease_token, started_at)
       VALUES ('sync.crm', 'flaky', $1, $1, 'running', 1, 1, $1, $1, gen_random_uuid(), $1)`,
      [new Date(start + 12 * MIN).toISOString()],
    );
    browser = await launch();
    page = await browser.newPage({ viewport: { width: 1400, height: 800 } });
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('the task list shows each task’s health and its recent slots as coloured cells, and filters by health', async () => {
    await open(page, base, '#/tasks');
    const flaky = page.locator('#tasks tr[data-task="flaky"]');
    expect(await flaky.locator('[data-health]').getAttribute('data-health')).toBe('failing');
    expect(await flaky.locator('[data-health]').innerText()).toBe('failing ×4'); // failed, dropped, failed, failed since the last finished run (cancelled counts as nothing)
    const cells = await flaky.locator('.strip .cell').evaluateAll((cs) => cs.map((c) => c.getAttribute('data-outcome')));
    expect(cells).toEqual([...HISTORY, 'pending']);
    expect(await page.locator('#tasks tr[data-task="steady"] [data-health]').getAttribute('data-health')).toBe('ok');
    await screenshot(page, 'tasks-health');

    await page.selectOption('select[name=health]', 'failing');
    await page.click('#task-filter button[type=submit]');
    await page.waitForFunction(`location.hash.includes('health=failing') && document.body.dataset.ready === 'true'`);
    expect(await page.locator('#tasks tbody tr').count()).toBe(1);
  });

  it('a cell links to its slot’s job; the task page draws the strip, lists the slots and edits the fields', async () => {
    await open(page, base, '#/tasks/flaky');
    const cells = page.locator('#slots .cell');
    expect(await cells.count()).toBe(HISTORY.length + 1);
    const failed = page.locator('#slots a.cell[data-outcome="failed"]').last();
    const href = await failed.getAttribute('href');
    expect(href).toMatch(/^#\/jobs\/\d+$/);
    expect(await page.locator('#runs tbody tr').first().innerText()).toContain('pending');
    await screenshot(page, 'task-health');

    await page.fill('#task-edit input[name=maxAttempts]', '3');
    await page.fill('#task-edit input[name=alertAfter]', '2h');
    await page.fill('#task-edit input[name=catchUpWindow]', '30m');
    await page.click('#task-edit button[type=submit]');
    await page.waitForFunction(`document.querySelector('#notice')?.textContent?.includes('saved')`);
    await settled(page);
    expect(await call('GET', '/periodic-tasks/flaky')).toMatchObject({
      maxAttempts: 3,
      alertAfter: '2h',
      catchUpWindow: '30m',
      endAt: null,
    });
    // bad input is refused with the API's words, and changes nothing
    await page.fill('#task-edit input[name=catchUpWindow]', 'soon');
    await page.click('#task-edit button[type=submit]');
    await page.waitForFunction(`document.querySelector('#notice')?.className === 'error'`);
    expect(await page.locator('#notice').innerText()).toContain('soon');
    expect((await call('GET', '/periodic-tasks/flaky')).catchUpWindow).toBe('30m');

    await page.click(`#slots a.cell[href="${href}"]`);
    await page.waitForFunction(`location.hash === ${JSON.stringify(href)} && document.body.dataset.ready === 'true'`);
    expect(await page.locator('#job-state').innerText()).toBe('failed');
  });
});
