import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { TestDatabase } from '../support/db.js';
import type { TestStack } from '../support/app.js';
import { useTestStack } from '../support/fixture.js';
import { QUEUED_WALK, RECENT_WINDOW } from '../../src/repositories/job/search.js';
import { callApi, CHROMIUM_TOOL, launch, open, screenshot, settled } from './support.js';

let tdb: TestDatabase;
let stack: TestStack;
useTestStack({}, (f) => ({ tdb, stack } = f));

let base = '';
let browser: Browser;
let page: Page;

const call = (method: string, path: string, body?: unknown) => callApi(base, method, path, body);

/** A job that failed for good: leased by a worker and reported failed with no attempt left. */
async function failedJob(type: string, message: string): Promise<string> {
  const job = await call('POST', '/jobs', { type, args: { order: 17 }, maxAttempts: 1 });
  const res = await call('POST', '/jobs/next', { worker: 'worker-ui', types: [type] });
  const leased = res.jobs.find((j: any) => j.id === job.id);
  await call('POST', `/jobs/${job.id}/failed`, { leaseToken: leased.leaseToken, error: { message } });
  return job.id as string;
}

describe.skipIf(CHROMIUM_TOOL.skip)('the console', () => {
  beforeAll(async () => {
    if (!CHROMIUM_TOOL.found) return; // under CI=true each test fails in beforeEach instead
    base = await stack.app.listen({ host: '127.0.0.1', port: 0 });
    await call('POST', '/jobs', { type: 'mail.send', group: 'customer:1', args: { customer: 1, to: 'ann@example.com' } });
    await call('POST', '/jobs', { type: 'mail.send', group: 'customer:2', args: { customer: 2, to: 'bob@example.com' } });
    await call('POST', '/jobs', {
      type: 'mail.send',
      group: 'customer:2',
      args: { customer: 2 },
      runAt: new Date(Date.now() + 3_600_000).toISOString(),
    });
    await call('POST', '/jobs', { type: 'report.build', args: { month: '2026-10' }, subject: 'october invoices' });
    await call('POST', '/periodic-tasks', { id: 'nightly-report', task: 'report.build', schedule: '0 3 * * *', timezone: 'Europe/Berlin' });
    await call('POST', '/periodic-tasks', { id: 'ping', task: 'ping', schedule: 'every 5m' });
    browser = await launch();
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  });
  beforeEach(() => CHROMIUM_TOOL.assert());
  afterAll(async () => {
    await browser?.close();
  });

  it('the overview shows every type and group with its counts and the throughput chart', async () => {
    await failedJob('ui.flaky', 'first failure');
    await open(page, base, '#/');
    const mail = page.locator('#types tr[data-type="mail.send"] td');
    expect(await mail.allInnerTexts()).toEqual(expect.arrayContaining(['mail.send', '2', '1', '0']));
    expect(await page.locator('#types tr[data-type="report.build"] td').nth(1).innerText()).toBe('1');
    expect(await page.locator('#groups tr[data-group="customer:2"] td').nth(1).innerText()).toBe('1');
    expect(await page.locator('#groups tr[data-group="customer:2"] td').nth(2).innerText()).toBe('1');
    expect(await page.locator('#throughput').count()).toBe(1);
    expect(await page.locator('main').innerText()).toContain('1 failed');
    await screenshot(page, 'overview');
  });

  it('the jobs page filters by state, type, group, text and args content', async () => {
    await open(page, base, '#/jobs');
    expect(await page.locator('#jobs tbody tr').count()).toBeGreaterThanOrEqual(4);
    await page.selectOption('select[name=state]', 'queued');
    await page.fill('input[name=type]', 'mail.send');
    await page.click('#job-filter button[type=submit]');
    await page.waitForFunction(`location.hash.includes('type=mail.send') && document.body.dataset.ready === 'true'`);
    expect(await page.locator('#jobs tbody tr').count()).toBe(3);
    await open(page, base, `#/jobs?argsContains=${encodeURIComponent('{"customer":2}')}`);
    expect(await page.locator('#jobs tbody tr').count()).toBe(2);
    await open(page, base, '#/jobs?group=customer%3A1');
    expect(await page.locator('#jobs tbody tr').count()).toBe(1);
    await open(page, base, '#/jobs?q=october');
    expect(await page.locator('#jobs tbody tr td:nth-child(2)').allInnerTexts()).toEqual(['report.build']);
    await open(page, base, '#/jobs?q=no-such-text-anywhere');
    expect(await page.locator('#no-jobs').count()).toBe(1);
    await open(page, base, '#/jobs?argsContains=%5B1%5D');
    expect(await page.locator('#refused').innerText()).toContain('argsContains must be a JSON object');
    expect(await page.locator('#job-filter').count()).toBe(1);
    await open(page, base, '#/jobs?type=mail.send');
    await screenshot(page, 'jobs');
  });

  it('a failed job opens with its history, and Retry queues it again', async () => {
    const id = await failedJob('ui.retry', 'SMTP 451 try again later');
    await open(page, base, '#/jobs?state=failed&type=ui.retry');
    await page.click(`#jobs a[href="#/jobs/${id}"]`);
    await page.waitForFunction(`document.querySelector('#job-state') !== null && document.body.dataset.ready === 'true'`);
    expect(await page.locator('#job-state').innerText()).toBe('failed');
    const attempt = await page.locator('#attempts tbody tr').first().locator('td').allInnerTexts();
    expect(attempt[0]).toBe('1');
    expect(attempt[1]).toBe('worker-ui');
    expect(attempt[4]).toBe('failed');
    expect(attempt[5]).toContain('SMTP 451');
    const kinds = await page.locator('#history tbody tr td:nth-child(2)').allInnerTexts();
    expect(kinds).toEqual(['created', 'leased', 'failed']);
    await screenshot(page, 'job');

    await page.click('button[data-action="retry"]');
    await page.waitForFunction(`document.querySelector('#job-state')?.textContent === 'queued'`);
    expect(await page.locator('#notice').innerText()).toContain('queued again');
    expect((await call('GET', `/jobs/${id}`)).state).toBe('queued');
    expect(await page.locator('#history tbody tr td:nth-child(2)').allInnerTexts()).toContain('retried');
  });

  it("a job's page shows its startBy and the checkpoint its last attempt saved", async () => {
    const startBy = new Date(Date.now() + 3_600_000).toISOString();
    const job = await call('POST', '/jobs', { type: 'ui.resumable', startBy });
    const res = await call('POST', '/jobs/next', { worker: 'worker-ui', types: ['ui.resumable'] });
    const leased = res.jobs.find((j: any) => j.id === job.id);
    await call('POST', `/jobs/${job.id}/release`, { leaseToken: leased.leaseToken, retryIn: '1h', state: { frames: 1200 } });
    await open(page, base, `#/jobs/${job.id}`);
    const row = (name: string) => page.locator(`table.fields tr:has(th:text-is("${name}")) td`);
    expect(await row('checkpoint').innerText()).toBe('{"frames":1200}');
    const shown = await row('start by').innerText();
    expect(shown).not.toBe('—');
    expect(shown).toContain(startBy.slice(11, 16)); // the hour and minute, however the time is written
    await screenshot(page, 'job-checkpoint');
  });

  it('bulk-retries the failed jobs of a type', async () => {
    await failedJob('ui.bulk', 'one');
    await failedJob('ui.bulk', 'two');
    await call('POST', '/jobs', { type: 'ui.bulk' });
    await open(page, base, '#/jobs?state=failed&type=ui.bulk');
    expect(await page.locator('#jobs tbody tr').count()).toBe(2);
    page.once('dialog', (d) => void d.accept());
    await page.click('button[data-action="bulk-retry"]');
    await page.waitForFunction(`document.querySelector('#notice')?.textContent?.includes('queued again')`);
    expect(await page.locator('#notice').innerText()).toContain('2 job(s) queued again');
    await settled(page); // the notice shows before the page renders again
    expect(await page.locator('#no-jobs').count()).toBe(1);
    expect((await call('GET', '/jobs?type=ui.bulk&state=queued')).items).toHaveLength(3);

    // the overview's button does the same for a type it lists (one with open jobs)
    await failedJob('ui.bulk2', 'three');
    await call('POST', '/jobs', { type: 'ui.bulk2' });
    await open(page, base, '#/');
    page.once('dialog', (d) => void d.accept());
    await page.click('#types tr[data-type="ui.bulk2"] button[data-action="retry-failed"]');
    await page.waitForFunction(`document.querySelector('#notice')?.textContent?.includes('1 failed job(s) of ui.bulk2 queued again')`);
    expect((await call('GET', '/jobs?type=ui.bulk2&state=queued')).items).toHaveLength(2);
  });

  it('pauses and resumes a type', async () => {
    await open(page, base, '#/');
    await page.click('#types tr[data-type="mail.send"] button[data-action="pause"]');
    await page.waitForSelector('#types tr[data-type="mail.send"] .badge.paused');
    expect((await call('GET', '/types/mail.send')).paused).toBe(true);
    await page.click('#types tr[data-type="mail.send"] button[data-action="resume"]');
    await page.waitForSelector('#types tr[data-type="mail.send"] button[data-action="pause"]');
    expect((await call('GET', '/types/mail.send')).paused).toBe(false);
  });

  it('lists periodic tasks and shows a task with its next 5 runs; disable, enable and trigger act', async () => {
    await open(page, base, '#/tasks');
    expect(await page.locator('#tasks tbody tr').count()).toBe(2);
    expect(await page.locator('#tasks tr[data-task="nightly-report"]').innerText()).toContain('0 3 * * *');
    expect(await page.locator('#tasks tr[data-task="nightly-report"]').innerText()).toContain('every day at 03:00');
    expect(await page.locator('#tasks tr[data-task="ping"]').innerText()).toContain('every 5m');
    await screenshot(page, 'tasks');

    await open(page, base, '#/tasks/nightly-report');
    const runs = await page.locator('#next-runs time').evaluateAll((ts) => ts.map((t) => t.getAttribute('datetime')!));
    expect(runs).toHaveLength(5);
    const task = await call('GET', '/periodic-tasks/nightly-report');
    expect(runs[0]).toBe(task.nextRun);
    for (const r of runs)
      expect(new Date(r).toLocaleString('en-GB', { timeZone: 'Europe/Berlin', hour: '2-digit', minute: '2-digit' })).toBe('03:00');
    await screenshot(page, 'task');

    await page.click('button[data-action="disable"]');
    await page.waitForSelector('button[data-action="enable"]');
    expect((await call('GET', '/periodic-tasks/nightly-report')).enabled).toBe(false);
    await page.click('button[data-action="enable"]');
    await page.waitForSelector('button[data-action="disable"]');
    expect((await call('GET', '/periodic-tasks/nightly-report')).enabled).toBe(true);

    await page.click('button[data-action="trigger"]');
    await page.waitForFunction(`document.querySelector('#notice')?.textContent?.includes('triggered')`);
    const jobs = await call('GET', '/jobs?periodicTaskId=nightly-report');
    expect(jobs.items.length).toBeGreaterThanOrEqual(1);
    await open(page, base, '#/jobs?periodicTaskId=nightly-report');
    // what the page shows when the rows differ (once seen with none, not reproduced since)
    expect(await page.locator('#jobs tbody tr').count(), await page.locator('main').innerText()).toBe(jobs.items.length);
    void tdb;
  });

  it('serves the console without a token and keeps it out of the OpenAPI document', async () => {
    const res = await fetch(`${base}/ui`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/html');
    expect((await fetch(`${base}/ui/app.js`)).headers.get('content-type')).toContain('javascript');
    expect((await fetch(`${base}/ui/nope.js`)).status).toBe(404);
    const doc = await call('GET', '/openapi.json');
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/ui'))).toEqual([]);
  });

  it('a text search behind a large backlog says a page ended early, and Next page goes on to the match', async () => {
    // the match oldest, then more queued jobs than one page walks below the newest 10,000
    await call('POST', '/jobs', { type: 'ui.backlog', args: { needle: 'haystack-needle-7' } });
    await tdb.db.pool.query(
      `INSERT INTO job (type, args, state, run_at) SELECT 'ui.filler', jsonb_build_object('n', g), 'queued', now() + interval '1 hour'
         FROM generate_series(1, $1::int) g`,
      [QUEUED_WALK + RECENT_WINDOW + 2_000],
    );
    try {
      await open(page, base, '#/jobs?q=haystack-needle-7');
      expect(await page.locator('#ended-early').count()).toBe(1);
      await screenshot(page, 'jobs-ended-early');
      await page.click('#next-page');
      await page.waitForSelector('#jobs tr[data-id]');
      expect(await page.locator('#jobs tr[data-id] td:nth-child(2)').allTextContents()).toEqual(['ui.backlog']);
      expect(await page.locator('#ended-early').count()).toBe(0);
      expect(await page.locator('#next-page').count()).toBe(0);
    } finally {
      await tdb.db.pool.query(`DELETE FROM job WHERE type = 'ui.filler'`);
    }
  });
});
